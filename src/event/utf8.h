/*
 * utf8.h - the one UTF-8 validator (RFC 3629), and what is built on it.
 *
 * Every place that must know whether bytes are UTF-8 asks keel_utf8_len:
 * the JSON parser (inline, on its string scanner's slow path), the
 * cartridge's check of rendered strings, the JSON string writer's
 * replacement of bad bytes, GraphML's XML text. Well-formed means RFC 3629
 * table 4: no overlong forms, no surrogates (U+D800-U+DFFF), nothing above
 * U+10FFFF, no stray continuation bytes, no sequence cut short by the end
 * of the text. A byte that starts no well-formed sequence is one bad byte:
 * writers that replace bad input put one U+FFFD for each (docs/json.md).
 */
#ifndef KEEL_UTF8_H
#define KEEL_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length (1-4) of the well-formed UTF-8 sequence at s, or 0 if the bytes
 * there are not one; end is the end of the text (s < end). Inline: the
 * JSON parser calls it for every non-ASCII character. */
static inline size_t keel_utf8_len(const unsigned char *s, const unsigned char *end)
{
	unsigned char c = s[0];
	size_t n;
	unsigned char lo = 0x80, hi = 0xbf; /* range of the second byte */
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* U+D800..U+DFFF */
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* above U+10FFFF */
	} else {
		return 0; /* a continuation byte, 0xc0, 0xc1 or 0xf5 up */
	}
	if ((size_t)(end - s) < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* The code point of the well-formed sequence of n bytes at s (n from
 * keel_utf8_len). */
static inline uint32_t keel_utf8_decode(const unsigned char *s, size_t n)
{
	static const unsigned char lead_mask[5] = {0, 0x7f, 0x1f, 0x0f, 0x07};
	uint32_t cp = s[0] & lead_mask[n];
	for (size_t i = 1; i < n; i++)
		cp = cp << 6 | (s[i] & 0x3fu);
	return cp;
}

/* Whether s[0..n) is well-formed UTF-8. Skips ASCII a word at a time. */
bool keel_utf8_valid(const char *s, size_t n);

#endif

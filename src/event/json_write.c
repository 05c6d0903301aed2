/*
 * json_write.c - the one JSON writer: every string, time, stored JSON text
 * and event reference Keel writes as JSON (dump, export, query answers,
 * HTTP answers, rejects, messages) goes through here, so they agree byte
 * for byte (docs/dump.md).
 */
#include "json_write.h"

#include <string.h>

#include "keel.h"
#include "utf8.h"

/* The one JSON string writer. Runs of bytes that need nothing are copied
 * whole; the dump writes every string through here, so the common case
 * (ASCII, no escapes) stays one pass of compares and one memcpy. */
void keel_buf_add_json_chars(struct keel_buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	size_t start = 0, i = 0;
	keel_buf_reserve(b, len);
	while (i < len) {
		unsigned char c = p[i];
		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
			i++;
			continue;
		}
		size_t n = 1;
		if (c >= 0x80 && (n = keel_utf8_len(p + i, end)) != 0) {
			i += n;
			continue;
		}
		keel_buf_add(b, s + start, i - start);
		char esc[6] = {'\\', 0, 0, 0, 0, 0};
		size_t w = 2;
		switch (c) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\n': esc[1] = 'n'; break;
		case '\t': esc[1] = 't'; break;
		case '\r': esc[1] = 'r'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		default:
			if (c >= 0x80) {
				/* not UTF-8: one U+FFFD for the byte */
				memcpy(esc, "\xef\xbf\xbd", 3);
				w = 3;
				break;
			}
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			w = 6;
		}
		keel_buf_add(b, esc, w);
		start = ++i;
	}
	keel_buf_add(b, s + start, len - start);
}

void keel_buf_add_json_str(struct keel_buf *b, struct keel_str s)
{
	if (!s.ptr) {
		keel_buf_add(b, "null", 4);
		return;
	}
	keel_buf_reserve(b, s.len + 2);
	b->data[b->len++] = '"';
	keel_buf_add_json_chars(b, s.ptr, s.len);
	keel_buf_addc(b, '"');
}

void keel_buf_add_json_time(struct keel_buf *b, int64_t t)
{
	char tb[KEEL_TIME_BUFSZ];
	if (t == KEEL_TIME_INF) {
		keel_buf_add(b, "null", 4);
		return;
	}
	size_t n = keel_time_format(t, tb);
	keel_buf_addc(b, '"');
	keel_buf_add(b, tb, n);
	keel_buf_addc(b, '"');
}

void keel_buf_add_json_raw(struct keel_buf *b, struct keel_str json)
{
	if (json.ptr)
		keel_buf_add(b, json.ptr, json.len);
	else
		keel_buf_add(b, "null", 4);
}

void keel_buf_add_json_ref(struct keel_buf *b, struct keel_event_ref r)
{
	if (!r.id.ptr) {
		keel_buf_add(b, "null", 4);
		return;
	}
	keel_buf_add(b, "{\"source\":", 10);
	keel_buf_add_json_str(b, r.source.ptr ? r.source : keel_str_make("", 0));
	keel_buf_add(b, ",\"id\":", 6);
	keel_buf_add_json_str(b, r.id);
	keel_buf_addc(b, '}');
}

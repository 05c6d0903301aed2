/*
 * json_write.h - the one JSON writer (json_write.c), appending to a
 * keel_buf.
 */
#ifndef KEEL_EVENT_JSON_WRITE_H
#define KEEL_EVENT_JSON_WRITE_H

#include "batch.h"
#include "util.h"

/* The one JSON string writer, used for every string Keel writes as JSON
 * (dump, export, query answers, HTTP answers, rejects, messages): '"' and
 * '\\' escaped, control characters as \n \t \r \b \f or else \u00XX,
 * everything else as it is, except that each byte not part of well-formed
 * UTF-8 (utf8.h) becomes U+FFFD, so the output is always valid JSON. On
 * valid UTF-8 this is the canonical dump's rule (docs/dump.md).
 * keel_buf_add_json_str appends the quoted literal (s.ptr == NULL appends
 * null); keel_buf_add_json_chars only what goes between the quotes. */
void keel_buf_add_json_str(struct keel_buf *b, struct keel_str s);
void keel_buf_add_json_chars(struct keel_buf *b, const char *s, size_t len);
/* Appends a time as a JSON string in canonical form; KEEL_TIME_INF (an open
 * end) appends null. */
void keel_buf_add_json_time(struct keel_buf *b, int64_t t);
/* Appends stored JSON text as is; absent (json.ptr == NULL) appends null. */
void keel_buf_add_json_raw(struct keel_buf *b, struct keel_str json);
/* Appends an event reference in its canonical JSON form,
 * {"source":S,"id":I}, or null when there is none (docs/dump.md): the one
 * writer of provenance for the dump, export, the queries and HTTP. */
void keel_buf_add_json_ref(struct keel_buf *b, struct keel_event_ref r);

#endif

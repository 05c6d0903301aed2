/*
 * media_type.h - reading a Content-Type value (media_type.c): the media
 * type, its charset, whether it is JSON. Shared by the HTTP server and the
 * log's consumer, which both take CloudEvents in binary content mode.
 */
#ifndef KEEL_EVENT_MEDIA_TYPE_H
#define KEEL_EVENT_MEDIA_TYPE_H

#include <stdbool.h>

#include "util.h"

/* A Content-Type header's media type ("type/subtype", as sent: compare
 * it case-insensitively) and its charset parameter (unquoted; ptr NULL
 * when there is none). Views into the header's text. */
struct keel_media_type {
	struct keel_str type;
	struct keel_str charset;
};

/* Reads a Content-Type value (media_type.c); false when it is not
 * `type/subtype *( ; name=value )`. */
bool keel_media_type_parse(const char *s, struct keel_media_type *mt);
/* Whether the media type is name (lowercase). */
bool keel_media_type_is(const struct keel_media_type *mt, const char *name);
/* Whether it declares JSON: subtype "json", or one ending in "+json"
 * (CloudEvents' rule). */
bool keel_media_type_is_json(const struct keel_media_type *mt);
/* Whether its text is UTF-8 as far as the charset says: none, utf-8, or
 * its subset us-ascii (any case). */
bool keel_media_type_utf8(const struct keel_media_type *mt);

#endif

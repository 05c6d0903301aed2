/*
 * binary_mode.h - a CloudEvent in binary content mode (attributes as
 * ce- headers, the data as the body or payload) written as the
 * structured envelope Keel logs (binary_mode.c). The HTTP server reads
 * it from a request, the log's consumer from a message's headers.
 */
#ifndef KEEL_EVENT_BINARY_MODE_H
#define KEEL_EVENT_BINARY_MODE_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

struct keel_ce_attr {
	struct keel_str name, value;
};

/* A binary-mode CloudEvent being read from its headers and body into the
 * structured envelope Keel logs (binary_mode.c, docs/http.md). Use:
 * _init; _header for every header field (all but ce- ones are ignored);
 * _attributes once the headers are in; _data with the body; then json
 * holds the envelope. Each step returns false with the reason in err (a
 * client error: 400). */
struct keel_ce_binary {
	struct keel_buf json;	/* the envelope being written */
	struct keel_buf tenant; /* the ce-tenant value, decoded (after _attributes) */
	struct keel_buf err;
	bool any;		/* a ce- header was seen: this is binary mode */
	/* Decoded names and values, and the attributes pointing into them. */
	struct keel_buf text;
	struct keel_ce_attr *attrs;
	size_t nattrs, cap;
};

void keel_ce_binary_init(struct keel_ce_binary *b);
void keel_ce_binary_free(struct keel_ce_binary *b);
/* One header field, name and value as received (NUL-terminated). */
bool keel_ce_binary_header(struct keel_ce_binary *b, const char *name, const char *value);
/* After the last header: adds datacontenttype from content_type (the
 * Content-Type value, or NULL), refuses a header given twice or a
 * required one missing (naming it), and writes the attributes. */
bool keel_ce_binary_attributes(struct keel_ce_binary *b, const char *content_type);
/* Closes the envelope with body[0..len) as its data: parsed and written as
 * JSON under "data" when json, else base64 under "data_base64"; an empty
 * body is no data. */
bool keel_ce_binary_data(struct keel_ce_binary *b, const char *body, size_t len, bool json);

#endif

/*
 * find.h - what of the finding reads (find.c) another wing needs: the
 * cursor of a page that ends at a name, for a caller that pages over
 * several stores' lists at once (keel serve --store-map's GET
 * /v1/tenants). Not part of the API.
 */
#ifndef KEEL_READ_FIND_H
#define KEEL_READ_FIND_H

#include "util.h"

/* Appends the cursor of a page whose last entry is `last` (what "next"
 * holds, unquoted). */
void keel_find_cursor(struct keel_buf *b, struct keel_str last);

#endif

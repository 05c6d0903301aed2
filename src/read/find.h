/*
 * find.h - what the finding reads (find.c) show the rest of the library
 * beyond keel.h: the cursor of a page, for a reader that merges the pages
 * of several stores (keel serve's store map, src/http/reads.c).
 */
#ifndef KEEL_READ_FIND_H
#define KEEL_READ_FIND_H

#include <stddef.h>

#include "util.h"

/* Appends "next": the cursor of a page whose last entry is last[0..len)
 * (the page after it starts after that name; docs/cli.md, "Finding
 * things"), or null when last is NULL: there is no next page. */
void keel_find_next(struct keel_buf *b, const char *last, size_t len);

#endif

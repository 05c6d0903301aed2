/*
 * find.h - what the finding reads (find.c) show the rest of the library
 * beyond keel.h: the cursor of a page, for a reader that merges the pages
 * of several stores (keel serve's store map, src/http/reads.c).
 */
#ifndef KEEL_READ_FIND_H
#define KEEL_READ_FIND_H

#include <stddef.h>

#include "util.h"

/* Appends to b the cursor of a page whose last entry is name[0..len):
 * the page after it starts after that name (docs/cli.md, "Finding
 * things"). */
void keel_find_cursor(struct keel_buf *b, const char *name, size_t len);

#endif

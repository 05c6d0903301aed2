/*
 * dump.h - the writer of one canonical dump line, shared by the dump and
 * export's NDJSON (docs/dump.md, docs/export.md) so the two cannot drift.
 */
#ifndef KEEL_DUMP_H
#define KEEL_DUMP_H

#include "store/store.h"
#include "util.h"

/* Appends r to b as one dump line: a compact JSON object, keys in the
 * documented order, ending in '\n'. */
void keel_dump_line(struct keel_buf *b, const struct keel_record *r);

#endif

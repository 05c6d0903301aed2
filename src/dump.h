/*
 * dump.h - the writer of one canonical dump line, shared by the dump and
 * export's NDJSON (docs/dump.md, docs/export.md) so the two cannot drift.
 */
#ifndef KEEL_DUMP_H
#define KEEL_DUMP_H

#include "store.h"
#include "util.h"

/* Appends r to b as one dump line: a compact JSON object, keys in the
 * documented order, ending in '\n'. */
void keel_dump_line(struct keel_buf *b, const struct keel_record *r);

/* Appends an event reference in its canonical JSON form,
 * {"source":S,"id":I}, or null when there is none (docs/dump.md): the one
 * writer of provenance for the dump, export, the queries and HTTP. */
void keel_buf_add_json_ref(struct keel_buf *b, struct keel_event_ref r);

#endif

/*
 * timeline.h - a timeline is the rows of one key: (tenant, subject,
 * predicate) for facts, (tenant, subject, relation, object) for relations
 * (docs/semantics.md). Rows are assertions written once; their ends are
 * derived on read (derive.h).
 */
#ifndef KEEL_TIMELINE_H
#define KEEL_TIMELINE_H

#include "util.h"

enum keel_row_kind { KEEL_ROW_FACT, KEEL_ROW_RELATION };

/* Hash of a timeline key; the same function everywhere. It is chained
 * (the tenant's hash, the subject's within it, then the timeline's from
 * its subject's) so that a caller resolving many keys of one event hashes
 * each part once. In memory only, never stored. */
uint64_t keel_timeline_hash(enum keel_row_kind kind, struct keel_str tenant,
			    struct keel_str subject, struct keel_str name,
			    struct keel_str object);
uint64_t keel_tenant_hash(struct keel_str tenant);
uint64_t keel_subject_hash(uint64_t tenant_hash, struct keel_str subject);
uint64_t keel_timeline_hash_from(enum keel_row_kind kind, uint64_t subject_hash,
				 struct keel_str name, struct keel_str object);

#endif

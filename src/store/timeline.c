/*
 * timeline.c - the hash of a timeline's key (timeline.h).
 */
#include "timeline.h"

#include "keel.h"

uint64_t keel_tenant_hash(struct keel_str tenant)
{
	return keel_hash64(tenant.ptr, tenant.len, 0x9e3779b97f4a7c15ull);
}

uint64_t keel_subject_hash(uint64_t tenant_hash, struct keel_str subject)
{
	return keel_hash64(subject.ptr, subject.len, tenant_hash);
}

uint64_t keel_timeline_hash_from(enum keel_row_kind kind, uint64_t subject_hash,
				 struct keel_str name, struct keel_str object)
{
	uint64_t h = keel_hash64(name.ptr, name.len, subject_hash + (uint64_t)kind + 1);
	if (kind == KEEL_ROW_RELATION)
		h = keel_hash64(object.ptr, object.len, h);
	return h;
}

uint64_t keel_timeline_hash(enum keel_row_kind kind, struct keel_str tenant,
			    struct keel_str subject, struct keel_str name,
			    struct keel_str object)
{
	return keel_timeline_hash_from(
	    kind, keel_subject_hash(keel_tenant_hash(tenant), subject), name, object);
}

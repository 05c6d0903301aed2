/*
 * moment.c - the moment a read asks about: the caller's read options
 * (at, known_at; docs/semantics.md) taken with their defaults, and a
 * scan narrowed to what was recorded by known_at. Every read takes them,
 * and a read known at a moment waits, when it must, for the writes that
 * may still record at it (keel_store_settle).
 */
#include "moment.h"

#include <string.h>

#include "options.h"

int keel_read_options_take(struct keel_store *s, const struct keel_read_options *given,
			   struct keel_read_options *o)
{
	if (given) {
		const char *why = keel_options_copy(o, sizeof *o, given);
		if (why)
			return keel_store_fail(s, KEEL_EINVAL, "keel_read_options: %s", why);
	} else {
		memset(o, 0, sizeof *o);
		o->size = sizeof *o;
	}
	if (!o->at_set)
		o->at = keel_time_now();
	return o->known_at_set ? keel_store_settle(s, o->known_at) : 0;
}

void keel_scan_known_at(struct keel_scan *q, const struct keel_read_options *o)
{
	q->known_at_set = o->known_at_set;
	q->known_at = o->known_at;
}

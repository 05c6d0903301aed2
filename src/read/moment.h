/*
 * moment.h - the moment a read asks about (moment.c). Not API.
 */
#ifndef KEEL_READ_MOMENT_H
#define KEEL_READ_MOMENT_H

#include "keel.h"
#include "store/store.h"

/* Copies the caller's options (NULL: the defaults) into *o, with at set
 * to now unless given. 0, or KEEL_EINVAL with the store's message set
 * when the options struct is malformed (a bad size). */
int keel_read_options_take(struct keel_store *s, const struct keel_read_options *given,
			   struct keel_read_options *o);

/* Narrows a scan to what was recorded by the options' known_at, if set. */
void keel_scan_known_at(struct keel_scan *q, const struct keel_read_options *o);

#endif

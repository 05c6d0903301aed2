/*
 * timestamp.h - the proleptic Gregorian calendar, for the library's files
 * that print or build dates themselves (the generator): one civil-date
 * algorithm, in timestamp.c, beside the RFC 3339 parser and formatter of
 * keel.h (keel_time_parse, keel_time_format).
 */
#ifndef KEEL_TIMESTAMP_H
#define KEEL_TIMESTAMP_H

#include <stdint.h>

/* Days from 1970-01-01 to y-m-d (m 1-12, d 1-31), for any year: Howard
 * Hinnant's days_from_civil, negative before 1970. */
int64_t keel_days_from_civil(int64_t y, int64_t m, int64_t d);

/* Its inverse: the date of day z since 1970-01-01. */
void keel_civil_from_days(int64_t z, int64_t *y, int64_t *m, int64_t *d);

#endif

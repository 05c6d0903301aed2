/*
 * workers.h - what KEEL_INGEST_WORKERS shows its tests: which tenants each
 * worker was handed. Not part of the library's API.
 */
#ifndef KEEL_WORKERS_H
#define KEEL_WORKERS_H

#include "keel.h"
#include "util.h"

struct keel_workers;
/* The workers behind an ingester in KEEL_INGEST_WORKERS mode, else NULL. */
const struct keel_workers *keel_ingest_workers_of(const struct keel_ingest *ing);
size_t keel_workers_count(const struct keel_workers *w);
/* The tenant names (NUL-terminated, first-seen order) handed to worker i. */
const struct keel_ptrvec *keel_workers_tenants_of(const struct keel_workers *w, size_t i);

#endif

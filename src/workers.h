/*
 * workers.h - what keel ingest --workers shows its tests: which tenants
 * each worker was handed (tenants mode). Not part of the library's API.
 */
#ifndef KEEL_WORKERS_H
#define KEEL_WORKERS_H

#include "../include/keel.h"
#include "util.h"

/* Workers with a queue of their own (tenants mode), else 1. */
size_t keel_workers_count(const struct keel_workers *w);
/* The tenant names (NUL-terminated, first-seen order) handed to worker i
 * in tenants mode. */
const struct keel_ptrvec *keel_workers_tenants_of(const struct keel_workers *w, size_t i);

#endif

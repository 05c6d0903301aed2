/*
 * store_map.h - which store each partition of a log is written to
 * (store_map.c; docs/log.md, "Store maps"): partition ranges to store
 * URLs, read from a file, or one store for every partition.
 */
#ifndef KEEL_LOG_STORE_MAP_H
#define KEEL_LOG_STORE_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct keel_store_range {
	uint32_t lo, hi; /* partitions lo..hi, both included */
	size_t url;	 /* index into urls */
};

struct keel_store_map {
	struct keel_store_range *ranges;
	size_t nranges;
	char **urls; /* distinct, in the order the file names them */
	size_t n;
};

/* Reads the map file at path. KEEL_EINVAL (or KEEL_EIO: not readable)
 * with err naming the line and the rule. */
int keel_store_map_read(const char *path, struct keel_store_map *m, struct keel_buf *err);
/* Every partition to url. */
int keel_store_map_one(const char *url, struct keel_store_map *m);
/* Whether the map covers partitions 0..partitions-1, each exactly once. */
int keel_store_map_check(const struct keel_store_map *m, uint32_t partitions,
			 struct keel_buf *err);
/* The index (into urls) of partition p's store; p must be covered. */
size_t keel_store_map_find(const struct keel_store_map *m, uint32_t p);
void keel_store_map_free(struct keel_store_map *m);

#endif

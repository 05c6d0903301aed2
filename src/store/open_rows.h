/*
 * open_rows.h - a bounded cache of timelines' open rows, kept by a SQL
 * store across batches so that a timeline a recent batch touched needs no
 * read for its open row.
 *
 * It is only right while the store's connection is the database's only
 * writer: the store checks that at the start of every transaction (SQLite:
 * PRAGMA data_version) and clears the cache when anyone else has written,
 * when a transaction rolls back, and when rows change outside a batch
 * (replay). Memory is bounded: entries not used for `age` batches go (at
 * the next sweep, every few batches), and the cache never holds more than
 * `max` after a batch.
 *
 * Both SQL stores use it: SQLite's open-row read returns a timeline's last
 * row, open or not; MySQL's returns open rows only (open_only), so a
 * timeline whose last row is closed is not remembered there.
 */
#ifndef KEEL_STORE_OPEN_ROWS_H
#define KEEL_STORE_OPEN_ROWS_H

#include "../timeline.h"
#include "../util.h"

struct keel_open_rows {
	struct keel_map map;
	struct keel_ptrvec entries;
	uint64_t batch; /* the current batch's number */
	size_t max;	/* entries kept at most */
	uint64_t age;	/* batches an entry may go unused */
	bool open_only; /* remember open rows only */
	uint64_t hits, misses;
};

void keel_open_rows_init(struct keel_open_rows *c, size_t max, uint64_t age,
			 bool open_only);
void keel_open_rows_free(struct keel_open_rows *c);
void keel_open_rows_clear(struct keel_open_rows *c);

/* The cached open row of tl's key (its strings owned by the cache), or NULL
 * when the cache does not know it. Counts hits and misses. */
const struct keel_row *keel_open_rows_get(struct keel_open_rows *c,
					  const struct keel_timeline *tl);

/* After a batch's rows got their seqs: records, for every timeline of the
 * batch's overlay, its open row (or that the cache knows none), then
 * starts the next batch, dropping entries unused for a while if full. */
void keel_open_rows_learn(struct keel_open_rows *c, const struct keel_ptrvec *timelines);

#endif

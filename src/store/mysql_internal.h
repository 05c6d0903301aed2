/*
 * mysql_internal.h - what the MySQL store shows its own tests and
 * benchmarks: counters that prove the batch path's promises (IN lists of at most a
 * thousand tuples, no warnings after prefetch reads, statements that do not
 * grow with the batch, memory bounded by the batch) and a way to run SQL on
 * the store's own connection. Not part of the library's API.
 */
#ifndef KEEL_STORE_MYSQL_INTERNAL_H
#define KEEL_STORE_MYSQL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct keel_store;

/* Row-constructor IN lists are cut into chunks of at most this many tuples
 * (docs/store-mysql.md: beyond the low thousands MySQL's range optimizer may
 * give up and scan, warning 3170). */
#define KEEL_MYSQL_IN_MAX 1000

struct keel_mysql_stats {
	uint64_t prefetch_statements; /* seen-id and prefetch reads */
	uint64_t prefetch_rows;	      /* rows of the store's state they returned */
	uint64_t cached_rows;	      /* open rows taken from the cache instead */
	size_t max_cache_entries;     /* the most open rows the cache held */
	uint64_t max_batch_rows;      /* the most of both in one batch */
	uint64_t in_lists;	      /* row-constructor IN lists sent */
	size_t max_in_tuples;	      /* the longest of them */
	uint64_t late_lookups;	      /* LIMIT 1 subqueries for late times */
	uint64_t closure_statements;  /* UPDATE ... CASE statements */
	uint64_t rows_closed;	      /* rows those statements closed */
	uint64_t insert_statements;   /* multi-row INSERTs or bulk inserts */
	uint64_t bulk_statements;     /* bulk executions (MariaDB's protocol) */
	size_t max_statement;	      /* bytes of the longest statement sent */
	uint64_t warnings;	      /* warnings after reads (SHOW WARNINGS) */
	unsigned last_warning;	      /* code of the last one, 0 if none */
	uint64_t reconnects;
	uint64_t other_writers; /* inserts by others seen while bulk ids were on */
	uint64_t logged_first;	 /* batches whose events went in before any lookup */
	uint64_t log_fallbacks;	 /* of those, found a logged id and looked up after all */
};

const struct keel_mysql_stats *keel_store_mysql_stats(const struct keel_store *s);
void keel_store_mysql_reset_stats(struct keel_store *s);

/* The statement profile (KEEL_MYSQL_PROFILE, or switched on here): per kind
 * of statement ("what", as in the store's errors), how many and the wall
 * time from sending each to the server's first answer. Switching clears
 * it. keel_store_mysql_profile returns the kinds in first-seen order. */
struct keel_mysql_prof {
	const char *what;
	double seconds;
	uint64_t count;
};
#define KEEL_MYSQL_PROF_KINDS 24
void keel_store_mysql_set_profile(struct keel_store *s, bool on);
size_t keel_store_mysql_profile(const struct keel_store *s,
				const struct keel_mysql_prof **kinds);

/* Statements are cut at this many bytes; by default the server's
 * max_allowed_packet less a margin. Tests lower it to force chunking. */
size_t keel_store_mysql_packet_limit(const struct keel_store *s);

/* The open-row cache (on unless KEEL_MYSQL_CACHE=0): tests of what the
 * reads touch turn it off. Switching drops what it holds. */
void keel_store_mysql_set_cache(struct keel_store *s, bool on);
void keel_store_mysql_set_packet_limit(struct keel_store *s, size_t bytes);

/* Runs one statement on the store's connection, through the same checked
 * path as the store's reads (its warnings are counted). Each result row is
 * passed to fn as NUL-terminated texts (NULL for SQL NULL); fn returns
 * non-zero to stop. Returns 0 or KEEL_ESTORE with the store's message set. */
typedef int (*keel_mysql_row_fn)(void *ud, unsigned ncols, char **row);
int keel_store_mysql_exec(struct keel_store *s, const char *sql, keel_mysql_row_fn fn,
			  void *ud);

#endif

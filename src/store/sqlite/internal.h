/*
 * internal.h - what the SQLite store shows its own tests and
 * benchmarks: the connection, so that they can read query plans
 * (EXPLAIN QUERY PLAN on the very statements the store prepared, found with
 * sqlite3_next_stmt), step counters, and hold locks. Not part of the
 * library's API.
 */
#ifndef KEEL_STORE_SQLITE_INTERNAL_H
#define KEEL_STORE_SQLITE_INTERNAL_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

struct keel_store;

/* The store's connection; the store must be a sqlite: store. */
sqlite3 *keel_store_sqlite_db(struct keel_store *s);

/* Lowers SQLite's length limit (SQLITE_LIMIT_LENGTH) and the longest
 * envelope the store takes with it; ingesters created afterwards use it. */
void keel_store_sqlite_set_length_limit(struct keel_store *s, int bytes);

/* The statement that finds the candidates of keel entities or keel
 * search (src/store/sqlite/find.c), with a lower bound (inclusive or not)
 * and an upper one or not, and search as known at a moment or not: for
 * the benchmark's EXPLAIN QUERY PLAN. b is a struct keel_buf. */
enum keel_sqlite_find {
	KEEL_SQLITE_FIND_ENTITIES, /* by prefix or none */
	KEEL_SQLITE_FIND_KIND,	   /* --kind */
	KEEL_SQLITE_FIND_STRING,   /* search for a string value */
	KEEL_SQLITE_FIND_VALUE,	   /* search for any other value */
	KEEL_SQLITE_FIND_CURRENT,  /* search at the present (the current rows) */
	KEEL_SQLITE_FIND_SPANS,	   /* search in the past (the spans) */
};
struct keel_buf;
/* A search in the past reads the spans when at most this many of them
 * hold its time, and walks otherwise (src/store/sqlite/find.c). */
#define KEEL_SQLITE_SPANS_MOST 2048
void keel_sqlite_find_sql(struct keel_buf *b, enum keel_sqlite_find what, bool lower,
			  bool lower_inclusive, bool upper, bool known_at);

/* The key of (tenant, predicate, value) in fact_spans
 * (src/store/sqlite/spans.c), the value as stored (compact JSON): for
 * the tests that check the spans. */
int64_t keel_store_sqlite_span_key(const char *tenant, const char *predicate,
				   const char *value);

/* Which statement a search for value (JSON text, as stored) of predicate
 * at `at` (not as known at a moment) reads its candidates with, after
 * folding as the search would (src/store/sqlite/find.c): for the
 * benchmark's "candidates from" column. */
int keel_store_sqlite_search_source(struct keel_store *s, const char *tenant,
				    const char *predicate, const char *value, int64_t at,
				    enum keel_sqlite_find *what);

/* The schema version this build creates and reads. */
int keel_store_sqlite_schema_version(void);

#endif

/*
 * internal.h - what the MySQL store shows its own tests and
 * benchmarks: counters that prove the batch path's promises (IN lists of at
 * most a thousand tuples, no warnings after reads, statements that do not
 * grow with the batch, nothing read but the ids and nothing updated), a
 * way to run SQL on the store's own connection, and a hook before COMMIT.
 * Not part of the library's API.
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
	uint64_t lookup_statements; /* seen-id lookups: the only reads of a batch */
	uint64_t in_lists;	    /* row-constructor IN lists sent */
	size_t max_in_tuples;	    /* the longest of them */
	uint64_t insert_statements; /* multi-row INSERTs or bulk inserts */
	uint64_t bulk_statements;   /* bulk executions (MariaDB's protocol) */
	uint64_t rows_appended;	    /* fact and relation rows written */
	uint64_t mentions_appended; /* entity mention rows written */
	size_t max_statement;	    /* bytes of the longest statement sent */
	uint64_t warnings;	    /* warnings after reads (SHOW WARNINGS) */
	unsigned last_warning;	    /* code of the last one, 0 if none */
	uint64_t reconnects;
};

const struct keel_mysql_stats *keel_store_mysql_stats(const struct keel_store *s);

/* The schema version this Keel writes (tests compare against it rather
 * than a number that another step would change). */
int keel_store_mysql_schema_version(void);
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
void keel_store_mysql_set_packet_limit(struct keel_store *s, size_t bytes);

/* Runs one statement on the store's connection, through the same checked
 * path as the store's reads (its warnings are counted). Each result row is
 * passed to fn as NUL-terminated texts (NULL for SQL NULL); fn returns
 * non-zero to stop. Returns 0 or KEEL_ESTORE with the store's message set. */
typedef int (*keel_mysql_row_fn)(void *ud, unsigned ncols, char **row);
int keel_store_mysql_exec(struct keel_store *s, const char *sql, keel_mysql_row_fn fn,
			  void *ud);

/* The server's id of the store's connection (KILL CONNECTION takes it). */
unsigned long keel_store_mysql_connection_id(struct keel_store *s);

/* For the tests that lose the connection at the worst moment: when set,
 * called on the committing thread just before any MySQL store of the
 * process sends COMMIT, with that store. NULL (nothing) unless a test
 * sets it. */
extern void (*keel_mysql_before_commit)(struct keel_store *s);

#endif

/*
 * internal.h - what the PostgreSQL store shows its own tests and
 * benchmarks: counters that prove the write path's promises (a constant
 * number of round trips a batch, whatever its size; nothing read but the
 * identities; new rows only through COPY) and a way to run SQL on the
 * store's own connection. Not part of the library's API.
 */
#ifndef KEEL_STORE_POSTGRES_INTERNAL_H
#define KEEL_STORE_POSTGRES_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct keel_store;

struct keel_pg_stats {
	/* Every wait for the server's answer: a statement is one, a COPY
	 * two (its start, then its end), whatever the rows. */
	uint64_t round_trips;
	uint64_t prepares;     /* of them, statements prepared (each once a connection) */
	uint64_t lookups;      /* identity lookups: the only reads of a batch */
	uint64_t lookup_ids;   /* identities asked for */
	uint64_t copies;       /* COPY ... FROM STDIN (binary) */
	uint64_t copied_rows;  /* rows sent through them */
	uint64_t copied_bytes; /* bytes of COPY data sent */
	uint64_t seq_blocks;   /* blocks of seq reserved */
	uint64_t rows_appended;	    /* fact and relation rows written */
	uint64_t mentions_appended; /* entity mention rows written */
	uint64_t reconnects;
};

const struct keel_pg_stats *keel_store_postgres_stats(const struct keel_store *s);
void keel_store_postgres_reset_stats(struct keel_store *s);

/* Which of a batch's identities are logged: the three arrays are its
 * distinct (tenant, source, id), unnested side by side; each one probe
 * of the log's key (KEEL_PG_SEEN; bench_postgres times it alone as the
 * re-send's limit). */
#define KEEL_PG_SEEN_SQL                                                                 \
	"SELECT e.tenant, e.source, e.id, e.hash, e.seq FROM "                           \
	"unnest($1::text[], $2::text[], $3::text[]) AS k(tenant, source, id) "           \
	"JOIN keel_events e ON e.tenant = k.tenant AND e.source = k.source "             \
	"AND e.id = k.id"

/* The schema version this Keel writes. */
int keel_store_postgres_schema_version(void);

/* Runs one statement on the store's connection (text results). Each
 * result row is passed to fn as NUL-terminated texts (NULL for SQL NULL);
 * fn returns non-zero to stop. Returns 0 or KEEL_ESTORE with the store's
 * message set. */
typedef int (*keel_pg_row_fn)(void *ud, int ncols, char **row);
int keel_store_postgres_exec(struct keel_store *s, const char *sql, keel_pg_row_fn fn,
			     void *ud);

#endif

/*
 * parts.h - what the files of the PostgreSQL store share: the
 * store's state, the statement helpers and each file's entry points. Not
 * part of the library's API (internal.h is what tests see).
 *
 *   store.c      transactions and savepoints, seen ids, appending a batch,
 *                the ops table
 *   url.c        postgres:// and postgresql:// URLs (libpq's parser), the
 *                URL shown in messages
 *   sql.c        running statements: parameters, binary results, errors,
 *                the round-trip count
 *   connect.c    connecting, the session, opening and closing the store
 *   schema.c     the versioned schema and the views
 *   copy.c       binary COPY ... FROM STDIN: events, mentions, rows
 *   read.c       tenants, scans and counts
 *   find.c       the candidates of keel entities and keel search
 *   replay.c     replacing a tenant: its rows deleted, the rebuild copied
 *   forget.c     keel forget: redacted envelopes and tombstones
 *   cartridge.c  each tenant's recorded cartridge
 *
 * Only the files of this folder include libpq-fe.h.
 */
#ifndef KEEL_STORE_POSTGRES_STORE_H
#define KEEL_STORE_POSTGRES_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "store/store.h"
#include "internal.h"

#define KEEL_PG_SCHEMA_VERSION 4
#define KEEL_PG_URL_FORM "postgres://user:password@host:port/db"

/* Rows take their seq from blocks of this many numbers, one block (from
 * the sequence keel_seq, which steps by it) per batch: seq is unique and
 * increasing in the order rows are written, and a batch costs one nextval
 * instead of one a row (docs/store-postgres.md, "Schema"). */
#define KEEL_PG_SEQ_BLOCK 65536

/* A transaction's fact and relation rows wait, encoded, to be written in
 * one COPY a table just before its commit (or before any other statement
 * of the connection), instead of one COPY a table a batch; past this many
 * bytes they are written at the end of the batch that passed it
 * (docs/store-postgres.md, "Round trips per batch"). */
#define KEEL_PG_PENDING_MAX ((size_t)4 << 20)

/* A parsed URL: libpq's connection keywords and values, as given (the
 * scheme checked, nothing of the environment added), and the URL with its
 * password masked for messages. */
struct keel_pg_url {
	const char **keys; /* NULL-terminated, for PQconnectdbParams */
	const char **values;
	size_t n;
	char *host; /* as shown in messages: a name, an address or a socket dir */
	char *port;
	char *db;
	char *user;
	char *sslmode;
	struct keel_buf shown;
	PQconninfoOption *parsed; /* owns the strings above but shown */
};

/* A statement's parameters, all sent in binary format. */
#define KEEL_PG_MAX_PARAMS 12
struct keel_pg_params {
	int n;
	const char *values[KEEL_PG_MAX_PARAMS];
	int lengths[KEEL_PG_MAX_PARAMS];
	int formats[KEEL_PG_MAX_PARAMS];
	Oid types[KEEL_PG_MAX_PARAMS];
	char ints[KEEL_PG_MAX_PARAMS][8];
};

/* The statements prepared on each connection, each when first run
 * (sql.c). */
/* The writers' gate's advisory lock (store.c): "keel" in ASCII. Advisory
 * locks are the database's, so two stores in one database share it: a
 * read then also waits for the other's writers, nothing worse. */
#define KEEL_PG_GATE_KEY "1801807212"

enum keel_pg_stmt {
	KEEL_PG_SEEN,	 /* the identity lookup, three arrays */
	KEEL_PG_RESERVE, /* blocks of seq */
	KEEL_PG_GATE,	 /* a writer's: the gate shared, the clock read */
	KEEL_PG_SETTLE, /* a reader's: the gate taken and let go */
	KEEL_PG_BEGIN,
	KEEL_PG_SAVEPOINT,
	KEEL_PG_COMMIT,
	KEEL_PG_ROLLBACK,
	KEEL_PG_STMTS
};

/* Rows of one table waiting for their COPY: binary COPY rows without the
 * header and trailer, and where the open batch's began (what rolling it
 * back to its savepoint drops). */
struct keel_pg_pending {
	struct keel_buf rows;
	uint64_t n;
	size_t mark_len;
	uint64_t mark_n;
};

struct keel_pg_store {
	struct keel_store base;
	PGconn *conn;
	struct keel_pg_url url;
	bool broken;	     /* connection lost: reconnect at the next begin */
	bool streaming;	     /* a single-row scan is still being read */
	bool tx_open;	     /* BEGIN sent */
	bool tx_writes;	     /* a batch has written in the open transaction */
	bool savepoint_sent; /* SAVEPOINT sent for the open batch */
	bool worker;	     /* one writer of several (keel ingest --workers) */
	char sqlstate[6];    /* of the last failed statement, "" if none */
	unsigned prepared;   /* enum keel_pg_stmt's prepared on this connection */
	int schema_was;
	struct keel_buf sql;		   /* statements built from parts */
	struct keel_buf arrays[3];	   /* the lookup's array parameters */
	struct keel_buf copy;		   /* COPY data being built */
	struct keel_pg_pending pending[2]; /* facts, relations */
	/* A COPY of waiting rows failed: the transaction cannot commit. */
	bool pending_lost;
	/* Rows of earlier batches were written within the open batch's
	 * savepoint: rolling it back takes the transaction. */
	bool pending_tied;
	struct keel_ptrvec rows; /* scratch: the batch's distinct identities */
	struct keel_map ids;	 /* seen_ids: batch events by identity */
	int64_t *blocks;	 /* the batch's reserved seq blocks */
	size_t nblocks, blocks_cap;
	size_t seq_next; /* numbers of the blocks given out */
	struct keel_pg_stats stats;
};

static inline struct keel_pg_store *keel_pg_downcast(struct keel_store *s)
{
	if (s->ops != &keel_store_postgres_ops)
		abort();
	return (struct keel_pg_store *)s;
}

static inline const struct keel_pg_store *keel_pg_cdowncast(const struct keel_store *s)
{
	if (s->ops != &keel_store_postgres_ops)
		abort();
	return (const struct keel_pg_store *)s;
}

/* Statements (sql.c). Every one counts its round trips; a failure sets
 * the store's message ("what: ...") and g->sqlstate, and marks the
 * connection broken when it was lost. */
void keel_pg_params_init(struct keel_pg_params *p);
void keel_pg_param_str(struct keel_pg_params *p, struct keel_str s); /* absent: NULL */
void keel_pg_param_i64(struct keel_pg_params *p, int64_t v);
void keel_pg_param_bytes(struct keel_pg_params *p, Oid type, const void *v, size_t n);
/* A libpq message as one line: "FATAL:  " dropped, its lines joined by
 * "; ". */
void keel_pg_one_line(struct keel_buf *out, const char *msg);
int keel_pg_result_error(struct keel_pg_store *g, PGresult *res, const char *what);
int keel_pg_lost(struct keel_pg_store *g, const char *what);
/* A statement's text with p (NULL: none), binary results; on success
 * *out holds them (PQclear it), or is NULL when out is NULL. */
int keel_pg_exec(struct keel_pg_store *g, const char *sql, const struct keel_pg_params *p,
		 const char *what, PGresult **out);
int keel_pg_exec_prepared(struct keel_pg_store *g, enum keel_pg_stmt st,
			  const struct keel_pg_params *p, const char *what,
			  PGresult **out);
int keel_pg_command(struct keel_pg_store *g, const char *sql, const char *what);
/* Whether s could be stored at all (absent, or UTF-8 without NUL, as
 * every string Keel writes): a read asked for anything else finds
 * nothing, as on every store, rather than a server error. */
bool keel_pg_storable(struct keel_str s);
/* A binary result's fields. */
struct keel_str keel_pg_str(const PGresult *r, int row, int col); /* NULL: absent */
int64_t keel_pg_i64(const PGresult *r, int row, int col);
bool keel_pg_bool(const PGresult *r, int row, int col);
/* Big-endian integers, as binary COPY and binary parameters take them. */
void keel_pg_put16(struct keel_buf *b, int16_t v);
void keel_pg_put32(struct keel_buf *b, int32_t v);
void keel_pg_put64(struct keel_buf *b, int64_t v);
/* A one-dimensional binary array of text (a lookup's parameter). */
void keel_pg_text_array_begin(struct keel_buf *b);
void keel_pg_text_array_add(struct keel_buf *b, struct keel_str s);
void keel_pg_text_array_end(struct keel_buf *b, int32_t n);

/* URLs (url.c) */
int keel_pg_url_parse(const char *url, struct keel_pg_url *u, struct keel_buf *err);
void keel_pg_url_free(struct keel_pg_url *u);

/* Connecting (connect.c) */
int keel_pg_connect(struct keel_pg_store *g, struct keel_buf *err);
int keel_pg_reconnect(struct keel_pg_store *g);
int keel_pg_open(const char *url, bool existing, struct keel_store **out,
		 struct keel_buf *err);
void keel_pg_close(struct keel_store *s);

/* The schema (schema.c) */
int keel_pg_schema(struct keel_pg_store *g, struct keel_buf *err);
int keel_pg_schema_versions(struct keel_store *s, int *was, int *now);

/* Batches (store.c) */
int keel_pg_tx(struct keel_pg_store *g);
/* A batch's appends; defer: its facts and relations wait for the commit
 * (the batch path) rather than go now (replay). */
int keel_pg_write_append(struct keel_pg_store *g, const struct keel_append *a,
			 bool defer);
/* The next seq of the open batch's reserved blocks. */
int64_t keel_pg_next_seq(struct keel_pg_store *g);
int keel_pg_reserve(struct keel_pg_store *g, size_t n);

/* Binary COPY (copy.c): each writes its part of a, in order, as one COPY;
 * nothing when there is nothing to write. */
int keel_pg_copy_events(struct keel_pg_store *g, struct keel_batch_event **ev, size_t n);
int keel_pg_copy_mentions(struct keel_pg_store *g, const struct keel_mention *v,
			  size_t n);
int keel_pg_copy_rows(struct keel_pg_store *g, const struct keel_assertion *v, size_t n,
		      enum keel_row_kind kind);
/* The batch path's facts and relations: encoded into g->pending (each
 * row numbered now, as keel_pg_copy_rows numbers them), then written by
 * keel_pg_flush_rows, one COPY a table; a failure there marks the
 * transaction's rows lost (g->pending_lost). keel_pg_drop_rows forgets
 * what waits. */
void keel_pg_defer_rows(struct keel_pg_store *g, const struct keel_assertion *v, size_t n,
			enum keel_row_kind kind);
size_t keel_pg_pending_bytes(const struct keel_pg_store *g);
int keel_pg_flush_rows(struct keel_pg_store *g);
void keel_pg_drop_rows(struct keel_pg_store *g);

/* Reading (read.c) */
int keel_pg_tenants(struct keel_store *s, struct keel_ptrvec *out);
int keel_pg_scan(struct keel_store *s, const struct keel_scan *q, keel_scan_fn fn,
		 void *ud);
int keel_pg_counts(struct keel_store *s, struct keel_str tenant, int64_t known_at,
		   uint64_t out[4]);

/* Finding (find.c) */
int keel_pg_entity_subjects(struct keel_store *s, const struct keel_candidates *q,
			    struct keel_ptrvec *out);
int keel_pg_fact_subjects(struct keel_store *s, const struct keel_candidates *q,
			  struct keel_ptrvec *out);

/* Replay (replay.c), forgetting (forget.c), cartridges (cartridge.c) */
int keel_pg_replace_tenant(struct keel_store *s, struct keel_str tenant,
			   const struct keel_replace_scope *scope,
			   const struct keel_append *a, uint64_t log_events,
			   struct keel_buf *note);
/* read.c: streams the records of sql (the columns a scan of q->type
 * selects) to fn */
int keel_pg_scan_query(struct keel_pg_store *g, struct keel_buf *sql,
		       const struct keel_pg_params *p, const struct keel_scan *q,
		       keel_scan_fn fn, void *ud);
int keel_pg_forget_find(struct keel_store *s, struct keel_str tenant,
			const struct keel_forget_find *f, keel_scan_fn fn, void *ud);
int keel_pg_forget_rows(struct keel_store *s, struct keel_str tenant,
			struct keel_str subject, struct keel_str quoted,
			const struct keel_mention_fix *fix, size_t n, uint64_t *removed);
int keel_pg_forget(struct keel_store *s, struct keel_str tenant,
		   const struct keel_redaction *r, size_t n,
		   const struct keel_tombstone *t);
int keel_pg_tombstone(struct keel_store *s, struct keel_str tenant,
		      const char *subject_hash, struct keel_tombstone *out,
		      struct keel_buf *buf);
int keel_pg_cartridge_get(struct keel_store *s, struct keel_str tenant,
			  struct keel_cartridge_record *out, struct keel_arena *hold);
int keel_pg_cartridge_put(struct keel_store *s, const struct keel_str *tenants, size_t n,
			const struct keel_cartridge_record *r, bool replace);
/* Log positions (log.c) */
int keel_pg_log_position(struct keel_store *s, const struct keel_log_position *pos,
			 uint64_t *stored);
int keel_pg_log_positions(struct keel_store *s, struct keel_str log,
			  keel_log_position_fn fn, void *ud);

#endif

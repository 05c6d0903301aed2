/*
 * parts.h - what the files of the SQLite store share: its limits,
 * the kinds of statements it prepares, the store's state, and each file's
 * entry points. Not part of the library's API (internal.h is what
 * tests see).
 *
 *   store.c       open and close, transactions and savepoints, seen
 *                 ids, append, the ops table
 *   schema.c      the versioned schema, its migrations and views
 *   sql.c         the statements: padded VALUES lists, multi-row
 *                 inserts, preparing, binding and running them
 *   read.c        tenants, scans and counts
 *   find.c        the candidates of keel entities and keel search
 *   current.c     the current rows keel search reads at the present
 *   spans.c       the spans keel search reads in the past
 *   fold.c        folding new fact rows into both, by readers (and
 *                 keel serve's writer when idle)
 *   replay.c      replacing a tenant's rows in one transaction
 *   cartridge.c   each tenant's recorded cartridge
 *   checkpoint.c  background WAL checkpoints of a writing handle
 *   forget.c      keel forget: redacted envelopes, tombstones, scrubbing
 *   names.c       names as integers: a batch's names to their ids
 */
#ifndef KEEL_STORE_SQLITE_STORE_H
#define KEEL_STORE_SQLITE_STORE_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "store/timeline.h"
#include "internal.h"

/* ------------------------------------------------------------ constants */

#define KEEL_SQLITE_BUSY_MS 5000
/* How often a read known at a recent moment looks whether the open write
 * transaction has ended (store.c, keel_sqlite_settle). */
#define KEEL_SQLITE_SETTLE_POLL_MS 2
/* Page cache per connection, in KiB (negative cache_size): the hot index
 * leaves of a large store, within the 64 MiB peak RSS of a 1M-event ingest. */
#define KEEL_SQLITE_CACHE_KIB 32768
/* Page size of a new file (an existing one keeps its own). Larger pages
 * make bulk ingest faster (shallower index b-trees, fewer WAL frames: a
 * 1M-event ingest 14 % faster at 8 KiB, 23 % at 16 KiB than at 4 KiB) and
 * small commits slower (every page a commit dirties goes to the WAL
 * whole: 3 000 one-event commits took 1.7x as long at 16 KiB, 1.2x at
 * 8 KiB). 8 KiB keeps streams and HTTP near 4 KiB's cost
 * (docs/store-sqlite.md). */
#define KEEL_SQLITE_PAGE_SIZE 8192
/* WAL pages before an automatic checkpoint: fewer, larger checkpoints
 * write a page touched by many batches once (docs/store-sqlite.md). */
#define KEEL_SQLITE_AUTOCHECKPOINT 8192

/* Keys per padded statement: the smallest size that holds what is left is
 * used, the largest for full chunks. At most 1000 keys per statement. */
static const unsigned keel_sqlite_ladder[] = {1,  2,   4,   8,	 16,  32,
					      64, 128, 256, 512, 1000};
#define KEEL_SQLITE_NLADDER KEEL_ARRAY_LEN(keel_sqlite_ladder)
#define KEEL_SQLITE_CHUNK 1000

/* Rows per multi-row INSERT: powers of two up to this. */
#define KEEL_SQLITE_INSERT_LOG2 7
#define KEEL_SQLITE_INSERT_MAX (1u << KEEL_SQLITE_INSERT_LOG2)

/* ----------------------------------------------------------------- scans */

/* Filters a scan statement was built for. */
enum {
	KEEL_SF_SUBJECT = 1u << 0,
	KEEL_SF_NAME = 1u << 1,
	KEEL_SF_OBJECT = 1u << 2,
	KEEL_SF_AT = 1u << 3,
	KEEL_SF_EVENT_ID = 1u << 4,
	KEEL_SF_KNOWN_AT = 1u << 5,
	KEEL_SF_RECORDED = 1u << 6,
	KEEL_SF_N = 1u << 7,
};

/* Parameters of every scan statement, by number. */
enum {
	KEEL_SP_TENANT = 1,
	KEEL_SP_SUBJECT,
	KEEL_SP_NAME,
	KEEL_SP_OBJECT,
	KEEL_SP_AT,
	KEEL_SP_EVENT_ID,
	KEEL_SP_KNOWN_AT,
	KEEL_SP_EVENT_SOURCE,
	KEEL_SP_RECORDED
};

/* ------------------------------------------------------------- names */

/* The fact and relation rows name their tenant, predicate or relation and
 * their event's source by id (docs/store-sqlite.md, "Names"). In SQL: the
 * id of the name bound at parameter p, 0 (no name's: ids begin at 1) when
 * the store has no such name, so that an unknown name matches no row;
 * and the name of the id in column c. Neither refers to the row being
 * read in a way that stops SQLite from seeking an index with it: the
 * first is evaluated once per run of the statement. */
#define KEEL_SQ_ID(p) "coalesce((SELECT id FROM names WHERE name = " p "), 0)"
#define KEEL_SQ_NAME(c) "(SELECT name FROM names WHERE id = " c ")"

/* The names a handle has found or made, text to id: a batch looks up only
 * those it has not met before. Ids never change once committed; the cache
 * is emptied when a transaction rolls back (its new names are gone), and
 * before a batch when it holds more than KEEL_SQLITE_NAMES_MOST. */
#define KEEL_SQLITE_NAMES_MOST 65536
#define KEEL_SQLITE_NAMES_BYID_MOST (1u << 20)
struct keel_sqlite_name {
	char *text; /* NULL: an empty slot */
	size_t len;
	uint64_t hash;
	int64_t id; /* 0: not known yet (during a batch's lookup) */
};

/* ------------------------------------------------------------- the store */

enum keel_sqlite_padded { KEEL_SQ_SEEN, KEEL_SQ_NAMES, KEEL_SQ_NPADDED };

/* A statement over a VALUES list: head, then the tuples, then tail. A
 * tuple with slot=true starts with its position (a literal) so that result
 * rows say which key they belong to. */
struct keel_sqlite_padded_def {
	const char *head;
	unsigned nparams; /* '?' per tuple */
	bool slot;
	const char *tail;
};

enum keel_sqlite_insert {
	KEEL_SI_FACT,
	KEEL_SI_REL,
	KEEL_SI_EVENT,
	KEEL_SI_EVENT_ID,
	KEEL_SI_MENTION,
	KEEL_SI_N
};

/* The current rows' statements (current.c). */
enum keel_sqlite_current {
	KEEL_SC_CHECK,	  /* the watermark and fact_rows' last seq */
	KEEL_SC_FOLD,	  /* the new rows into fact_current */
	KEEL_SC_HORIZONS, /* the new rows' horizons */
	KEEL_SC_MARK,	  /* the watermark set */
	KEEL_SC_LOWER,	  /* the watermark brought down to the last seq left */
	KEEL_SC_HORIZON,  /* one predicate's horizon */
	/* the spans (spans.c) */
	KEEL_SC_SPAN_NEW,     /* the new rows, by timeline and order */
	KEEL_SC_SPAN_CURRENT, /* a timeline's current row */
	KEEL_SC_SPAN_BEFORE,  /* the row before a late one */
	KEEL_SC_SPAN_FROM,    /* a timeline's rows from there */
	KEEL_SC_SPAN_PUT,     /* one span written */
	KEEL_SC_SPAN_DROP,    /* the spans of a replace's rows */
	KEEL_SC_SPAN_COUNT,   /* the spans of a key holding a time, up to a limit */
	KEEL_SC_N
};

/* One key of a padded query: a batch's event. */
struct keel_sqlite_key {
	void *ptr;
};

/* The handle's background checkpoints (checkpoint.c). running,
 * file and db belong to the handle's thread (then db to the checkpointer's
 * thread); runs and frames are read by any thread (GET /metrics). */
struct keel_sqlite_checkpointer {
	char *file; /* absolute path; NULL for an in-memory database */
	bool running;
	sqlite3 *db; /* its own connection */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	bool attached;
	int last_ckpt;
	atomic_uint_fast64_t runs;   /* checkpoints that copied frames */
	atomic_uint_fast64_t frames; /* frames (pages) copied */
};

/* A batch's savepoint: the last seq of each table before it (store.c).
 * deleted: a replace deleted rows since, which the savepoint cannot
 * bring back. */
struct keel_sqlite_savepoint {
	bool open, deleted;
	int64_t fact_seq, rel_seq, event_seq, mention_seq;
};

/* cartridge.c's statements, kept prepared: one of each per tenant. */
enum keel_sqlite_cartridge_stmt {
	KEEL_SCART_GET,
	KEEL_SCART_PUT,
	KEEL_SCART_TENANT,
	KEEL_SCART_REPLACE,
	KEEL_SCART_N
};

struct keel_sqlite_store {
	struct keel_store base;
	sqlite3 *db;
	char *path; /* for "sqlite \"PATH\": ..." messages */
	sqlite3_stmt *padded[KEEL_SQ_NPADDED][KEEL_SQLITE_NLADDER];
	sqlite3_stmt *insert[KEEL_SI_N][KEEL_SQLITE_INSERT_LOG2 + 1];
	sqlite3_stmt *scan[4][KEEL_SF_N];
	bool scan_busy[4][KEEL_SF_N];
	sqlite3_stmt *begin, *commit, *rollback;
	sqlite3_stmt *max_seq, *last_recorded, *counts, *tenants;
	sqlite3_stmt *current[KEEL_SC_N]; /* current.c */
	sqlite3_stmt *cartridge[KEEL_SCART_N]; /* cartridge.c */
	int bind_rc; /* first bind failure since the last statement ran */
	/* The last seq used per table, read when a transaction begins (under
	 * the write lock); seqs a rolled-back batch used are not reused. */
	int64_t fact_seq, rel_seq, event_seq, mention_seq;
	struct keel_sqlite_savepoint sp; /* the open batch's (store.c) */
	/* The schema version the file had when this handle opened it, and
	 * the one it has now (keel migrate). */
	int schema_was, schema_now;
	/* scratch reused by every batch */
	struct keel_sqlite_key *keys;
	size_t nkeys, keys_cap;
	const struct keel_assertion **rows; /* one kind's rows of a batch */
	size_t rows_cap;
	struct keel_sqlite_checkpointer ckpt;
	/* names.c: the cache of ids, and the ids of a batch's rows (tenant,
	 * name, source per row) */
	struct keel_sqlite_name *names;
	size_t names_cap, names_n;
	int64_t *row_ids;
	size_t row_ids_cap;
	sqlite3_stmt *name_put;
	/* and the other way, id to text, for the scans: by id (ids are
	 * dense from 1), up to KEEL_SQLITE_NAMES_BYID_MOST; a larger id is
	 * read into one of the spill buffers, in turn */
	struct keel_str *byid;
	size_t byid_cap;
	sqlite3_stmt *name_get;
	struct keel_buf spill[4];
	unsigned spill_next;
	/* keel_store_durable_commits: each commit syncs the log (store.c),
	 * counted in commit_syncs (read by any thread: GET /metrics). */
	bool durable;
	atomic_uint_fast64_t commit_syncs;
	/* The open transaction turned secure_delete on (a forget): it is set
	 * back to secure_delete_was, the connection's own, when the
	 * transaction ends. */
	bool secure_delete;
	int secure_delete_was;
};

static inline struct keel_sqlite_store *keel_sqlite_downcast(struct keel_store *s)
{
	if (s->ops != &keel_store_sqlite_ops)
		abort();
	return (struct keel_sqlite_store *)s;
}

/* Sets the store's message from the connection's last error. */
static inline int keel_sqlite_fail(struct keel_sqlite_store *s)
{
	return keel_store_fail(&s->base, KEEL_ESTORE, "sqlite \"%s\": %s", s->path,
			       sqlite3_errmsg(s->db));
}

/* The multi-row INSERTs' definitions, by enum keel_sqlite_insert (sql.c). */
extern const struct keel_sqlite_padded_def keel_sqlite_insert_defs[];

/* Binds the parameters of one key of query q. */
typedef void (*keel_sqlite_bind_fn)(struct keel_sqlite_store *s, sqlite3_stmt *st, int p,
				    const struct keel_sqlite_key *k);

/* Handles one result row of query q for key k. */
typedef void (*keel_sqlite_row_fn)(struct keel_sqlite_store *s, sqlite3_stmt *st,
				   const struct keel_sqlite_key *k, void *ud);

/* Hot helpers, inline: binding a batch's values and reading result
 * columns happen for every row. A failed bind is kept and reported when
 * the statement is about to run (keel_sqlite_bind_failed, sql.c). */
void keel_sqlite_bind_failed(struct keel_sqlite_store *s, int rc);

static inline void keel_sqlite_bind_str(struct keel_sqlite_store *s, sqlite3_stmt *st,
					int i, struct keel_str v)
{
	int rc =
	    v.ptr ? sqlite3_bind_text64(st, i, v.ptr, v.len, SQLITE_STATIC, SQLITE_UTF8)
		  : sqlite3_bind_null(st, i);
	if (rc != SQLITE_OK)
		keel_sqlite_bind_failed(s, rc);
}

static inline void keel_sqlite_bind_i64(struct keel_sqlite_store *s, sqlite3_stmt *st,
					int i, int64_t v)
{
	int rc = sqlite3_bind_int64(st, i, v);
	if (rc != SQLITE_OK)
		keel_sqlite_bind_failed(s, rc);
}

static inline struct keel_str keel_sqlite_col_str(sqlite3_stmt *st, int i)
{
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return KEEL_STR_NULL;
	const char *p = (const char *)sqlite3_column_text(st, i);
	return keel_str_make(p ? p : "", (size_t)sqlite3_column_bytes(st, i));
}

static inline void keel_sqlite_keys_push(struct keel_sqlite_store *s, void *ptr)
{
	if (s->nkeys == s->keys_cap) {
		s->keys_cap = s->keys_cap ? 2 * s->keys_cap : 1024;
		s->keys = keel_xrealloc(s->keys, s->keys_cap * sizeof *s->keys);
	}
	s->keys[s->nkeys++] = (struct keel_sqlite_key){ptr};
}

/* Statements (sql.c) */
int keel_sqlite_run_padded(struct keel_sqlite_store *s, enum keel_sqlite_padded q,
			   keel_sqlite_bind_fn bind, keel_sqlite_row_fn row, void *ud);
void keel_sqlite_keys_reset(struct keel_sqlite_store *s);
int keel_sqlite_run(struct keel_sqlite_store *s, sqlite3_stmt *st);
/* BEGIN IMMEDIATE without waiting: *locked false when another connection
 * holds the write lock, or the file cannot be written (sql.c). */
int keel_sqlite_try_lock(struct keel_sqlite_store *s, bool *locked);
/* Runs st (bound) for its first row: *found (when not NULL) whether it
 * gave one, and its first n columns, integers, in out (left as they were
 * when there is none). */
int keel_sqlite_ints(struct keel_sqlite_store *s, sqlite3_stmt *st, bool *found,
		     int64_t *out, int n);
int keel_sqlite_finish(struct keel_sqlite_store *s, sqlite3_stmt *st, int rc);
int keel_sqlite_start(struct keel_sqlite_store *s, sqlite3_stmt *st);
int keel_sqlite_fixed_stmt(struct keel_sqlite_store *s, sqlite3_stmt **slot,
			   const char *sql);
int keel_sqlite_insert_stmt(struct keel_sqlite_store *s, enum keel_sqlite_insert t,
			    unsigned log2, sqlite3_stmt **out);
int keel_sqlite_prepare(struct keel_sqlite_store *s, const char *sql, size_t len,
			sqlite3_stmt **out);

/* The schema (schema.c) */
int keel_sqlite_check_schema(struct keel_sqlite_store *s);
int keel_sqlite_migrate(struct keel_sqlite_store *s);
int keel_sqlite_exec(struct keel_sqlite_store *s, const char *sql);

/* Names (names.c). names_ids: the ids of the rows' names, s->row_ids[3 *
 * i + k] for row i (k: 0 tenant, 1 predicate or relation, 2 source),
 * new names inserted. names_forget: empties the cache (a rollback).
 * names_free: at close. */
int keel_sqlite_names_ids(struct keel_sqlite_store *s, const struct keel_assertion *rows,
			  size_t n);
void keel_sqlite_names_forget(struct keel_sqlite_store *s);
/* name_of: the text of id in *out, valid until the cache is emptied (a
 * rollback), or, when *stable is false, until four more such calls.
 * An id with no name (which no row holds) is an error. */
int keel_sqlite_name_of(struct keel_sqlite_store *s, int64_t id, struct keel_str *out,
			bool *stable);
void keel_sqlite_names_free(struct keel_sqlite_store *s);

/* Batches (store.c) */
int keel_sqlite_append(struct keel_store *bs, const struct keel_append *a);

/* Reading (read.c) */
int keel_sqlite_counts(struct keel_store *bs, struct keel_str tenant, int64_t known_at,
		       uint64_t out[4]);
int keel_sqlite_tenants(struct keel_store *bs, struct keel_ptrvec *out);
int keel_sqlite_scan(struct keel_store *bs, const struct keel_scan *q, keel_scan_fn fn,
		     void *ud);

/* Finding (find.c) */
int keel_sqlite_entity_subjects(struct keel_store *bs, const struct keel_candidates *q,
				struct keel_ptrvec *out);
int keel_sqlite_fact_subjects(struct keel_store *bs, const struct keel_candidates *q,
			      struct keel_ptrvec *out);

/* Current rows (current.c). fold: brings fact_current up to the
 * last fact row; *ready is true when it is (folded now or before), false
 * when this handle cannot fold (read-only, busy, inside a transaction),
 * and the search then walks. current_drop: in the transaction of a
 * replace, before its rows are appended, the current rows and horizons
 * of what it deleted (the tenant, or the scope's predicates), and the
 * watermark down to the last seq left. horizon: a predicate's horizon,
 * *found false when no row of it was folded. searchable: whether
 * fact_current holds a value (compact JSON) of that kind. */
int keel_sqlite_fold(struct keel_sqlite_store *s, bool *ready);
/* The store's fold op (struct keel_store_ops). */
int keel_sqlite_fold_some(struct keel_store *bs, int64_t most, bool *left);
int keel_sqlite_current_stmt(struct keel_sqlite_store *s, enum keel_sqlite_current c,
			     sqlite3_stmt **out);
int keel_sqlite_current_drop(struct keel_sqlite_store *s, struct keel_str tenant,
			     const struct keel_replace_scope *scope);
/* Runs st, whose ?1 is a tenant and ?2 a predicate (NULL: every one),
 * once per fact predicate of scope, or once for the whole tenant. */
int keel_sqlite_per_predicate(struct keel_sqlite_store *s, sqlite3_stmt *st,
			      struct keel_str tenant, const struct keel_replace_scope *scope);
int keel_sqlite_horizon(struct keel_sqlite_store *s, struct keel_str tenant,
			struct keel_str predicate, bool *found, int64_t *out);
bool keel_sqlite_searchable(struct keel_str value);

/* Spans (spans.c). span_key: the key of (tenant, predicate, value)
 * in fact_spans. spans_fold: the spans of the rows of seqs (mark, upto],
 * in the fold's transaction before fact_current takes them. spans_drop:
 * in a replace's transaction, before its rows are deleted, the spans of
 * the tenant's rows (or of the scope's predicates). */
int64_t keel_sqlite_span_key(struct keel_str tenant, struct keel_str predicate,
			     struct keel_str value);
int keel_sqlite_spans_fold(struct keel_sqlite_store *s, int64_t mark, int64_t upto);
int keel_sqlite_spans_drop(struct keel_sqlite_store *s, struct keel_str tenant,
			   const struct keel_replace_scope *scope);
/* spans_count: *n the spans under key that hold the time at, counted up
 * to most (the R*Tree alone). A search in the past reads the spans when
 * at most KEEL_SQLITE_SPANS_MOST hold its time (find.c). */
int keel_sqlite_spans_count(struct keel_sqlite_store *s, int64_t key, int64_t at,
			    int64_t most, int64_t *n);

/* Recorded cartridges (cartridge.c) */
int keel_sqlite_cartridge_get(struct keel_store *bs, struct keel_str tenant,
			      struct keel_cartridge_record *out, struct keel_arena *hold);
int keel_sqlite_cartridge_put(struct keel_store *bs, const struct keel_str *tenants, size_t n,
			const struct keel_cartridge_record *r, bool replace);

/* Replay (replay.c) */
int keel_sqlite_replace_tenant(struct keel_store *bs, struct keel_str tenant,
			       const struct keel_replace_scope *scope,
			       const struct keel_append *a, uint64_t log_events,
			       struct keel_buf *note);

/* Forgetting (forget.c): the ops forget, tombstone and scrub. */
int keel_sqlite_forget(struct keel_store *bs, struct keel_str tenant,
		       const struct keel_redaction *r, size_t n,
		       const struct keel_tombstone *t);
int keel_sqlite_forget_find(struct keel_store *bs, struct keel_str tenant,
			    const struct keel_forget_find *f, keel_scan_fn fn, void *ud);
int keel_sqlite_forget_rows(struct keel_store *bs, struct keel_str tenant,
			    struct keel_str subject, struct keel_str quoted,
			    const struct keel_mention_fix *fix, size_t n, uint64_t *removed);
/* spans.c: one timeline's spans written again from its first row, among
 * the rows folded (seq <= upto) */
int keel_sqlite_spans_redo(struct keel_sqlite_store *s, struct keel_str tenant,
			   struct keel_str subject, struct keel_str predicate, int64_t upto);
int keel_sqlite_tombstone(struct keel_store *bs, struct keel_str tenant,
			  const char *subject_hash, struct keel_tombstone *out,
			  struct keel_buf *buf);
int keel_sqlite_scrub(struct keel_store *bs);

/* Background checkpoints (checkpoint.c). init at open (the
 * connection is open); start before each transaction (it does nothing
 * once running, or for an in-memory database); stop at close. */
void keel_sqlite_checkpoint_init(struct keel_sqlite_store *s);
int keel_sqlite_checkpoint_start(struct keel_sqlite_store *s);
void keel_sqlite_checkpoint_stop(struct keel_sqlite_store *s);
/* The checkpoints' and the durable commits' counters for GET /metrics (the
 * ops' metrics). */
void keel_sqlite_metrics(struct keel_store *bs, struct keel_buf *out);

#endif

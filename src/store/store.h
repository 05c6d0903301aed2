/*
 * store.h - the backend interface: a table of function pointers behind the
 * opaque keel_store handle (docs/stores.md).
 *
 * A backend is its own files in src/store/ that fill a const keel_store_ops
 * and register it in store.c's table (docs/architecture.md, "A new store").
 * Its state embeds struct keel_store first and downcasts with
 * keel_store_downcast-style checks on ops.
 *
 * The library calls backends and asks about them only through the
 * keel_store_* wrappers below, never s->ops directly: the wrappers are
 * where checks and counting live. Nothing outside src/store/ and store.c
 * knows a URL scheme or a backend's library.
 *
 * Errors: every op returns 0 or a negative KEEL_E* code and on failure
 * sets the store's message with keel_store_fail.
 */
#ifndef KEEL_STORE_H
#define KEEL_STORE_H

#include "keel.h"
#include "event/batch.h"
#include "timeline.h"
#include "util.h"

enum keel_record_type {
	KEEL_REC_ENTITY,
	KEEL_REC_FACT,
	KEEL_REC_RELATION,
	KEEL_REC_EVENT,
};

/* One stored record, as scans return it. Views are valid only during the
 * callback. */
struct keel_record {
	enum keel_record_type type;
	struct keel_str tenant;
	/* entity, fact, relation */
	struct keel_str subject;
	/* entity */
	struct keel_str kind; /* absent: null */
	int64_t kind_time;
	int64_t first_seen;
	int64_t last_seen;
	/* fact, relation */
	struct keel_str name; /* predicate or relation */
	struct keel_str object;
	struct keel_str value; /* fact: compact JSON, absent = null */
	bool linked;
	int64_t valid_from;
	/* Derived on read (docs/semantics.md): a store's scan leaves them
	 * unset (KEEL_TIME_INF, null) and keel_store_scan fills them in. */
	int64_t valid_to; /* KEEL_TIME_INF = open */
	struct keel_event_ref asserted_by;
	struct keel_event_ref closed_by; /* ptrs NULL: open */
	int64_t seq; /* arrival order of the row (rows) or event (events) */
	/* every type: when the store recorded it (entities: the latest of
	 * their visible mentions) */
	int64_t recorded_at;
	/* event */
	struct keel_str source; /* "" when its envelope has none */
	struct keel_str id;
	struct keel_str event_type;
	int64_t time;
	struct keel_str envelope;
	uint64_t hash;
};

/* What to scan: one record type of one tenant, narrowed by the optional
 * filters.
 *
 * What keel_store_scan gives its callback: records in canonical dump order
 * (docs/dump.md) with facts and relations derived (valid_to, closed_by)
 * from the next assertion on their timeline; with at_set only the rows
 * valid at `at` (from <= at < to, never an empty row); with known_at_set
 * everything as it stood when known_at was the store's clock: only what
 * was recorded by then (recorded_at <= known_at), derived among those.
 *
 * What a store's scan op gives (the raw contract, store.c derives from
 * it): rows only among those recorded by known_at when known_at_set;
 *  - entities: one record per entity, aggregated over its visible
 *    mentions (first_seen min, last_seen max, kind of the mention with
 *    the least kind_time giving one, ties: the later mention), by subject;
 *  - facts and relations: the assertions as written, valid_to and
 *    closed_by unset, ordered by subject, name, object, valid_from, seq
 *    (so each timeline is contiguous and in (valid_from, arrival) order);
 *    with at_set, of each timeline only the last row with valid_from <=
 *    at and the row after it (the first with valid_from > at), if any;
 *  - events: by seq.
 * raw: keel_store_scan hands the store's records through as they are
 * (history --changes derives belief changes itself). */
struct keel_scan {
	enum keel_record_type type;
	struct keel_str tenant;	    /* required */
	struct keel_str subject;    /* optional: rows/entity of this subject */
	struct keel_str name;	    /* optional: predicate / relation */
	struct keel_str object;	    /* optional (relations): this object */
	bool at_set;		    /* optional: rows with from <= at < to */
	int64_t at;
	bool known_at_set; /* optional: as recorded by known_at */
	int64_t known_at;
	bool raw;
	/* optional (events): the event of this identity; event_source is
	 * then required too */
	struct keel_str event_id;
	struct keel_str event_source;
	/* optional (entities, events): only what was recorded at exactly
	 * this moment, one transaction's (keel forget, which mends the
	 * mentions of the transactions it touched): an entity aggregated
	 * over its mentions recorded then, the events recorded then */
	bool recorded_set;
	int64_t recorded;
};

/* One assertion (fact, unset, link, unlink) as written: once, never
 * updated (docs/semantics.md). The store numbers rows in the order it is
 * given them, which is arrival order. */
struct keel_assertion {
	enum keel_row_kind kind;
	struct keel_str tenant;
	struct keel_str subject;
	struct keel_str name;	/* predicate or relation */
	struct keel_str object; /* relations */
	struct keel_str value;	/* facts: compact JSON; ptr NULL: unset */
	bool linked;		/* relations: link or unlink */
	int64_t valid_from;
	struct keel_event_ref asserted_by;
	int64_t recorded_at;
};

/* The mentions of one entity within one batch, folded (keel_entity_mention):
 * the store appends it as one row; reads aggregate an entity's rows. */
struct keel_mention {
	struct keel_str tenant;
	struct keel_str subject;
	struct keel_str kind; /* ptr NULL: none given */
	int64_t kind_time;
	int64_t first_seen;
	int64_t last_seen;
	int64_t recorded_at;
};

/* What one batch (or a replay's or a load's rebuild) appends. Every array
 * is in arrival order; the store appends them in that order and sets each
 * event's seq. Everything stays valid until the transaction ends. */
struct keel_append {
	struct keel_batch_event **events; /* to log, recorded_at set */
	size_t nevents;
	/* Each event's seq is read back after the append (on_conflict names
	 * the logged event of a conflict by it). A store whose cheapest way
	 * to log cannot say them with other writers at work (MySQL's bulk
	 * path) takes it only when this is false, and leaves seq 0. */
	bool seqs_wanted;
	struct keel_assertion *rows;
	size_t nrows;
	struct keel_mention *mentions;
	size_t nmentions;
};

/* The part of a tenant a replace rewrites: a replay rewrites only what
 * its rebuild changed. The entities or not; the facts of the predicates
 * and the relations named in names[KEEL_ROW_FACT] and
 * names[KEEL_ROW_RELATION]. */
struct keel_replace_scope {
	bool entities;
	struct keel_str *names[2];
	size_t nnames[2];
	/* A later part of a replace written in parts (a replay writes a
	 * bounded part at a time): nothing to delete and the log already
	 * checked by the first part; only a's rows and mentions appended. */
	bool more;
};

/* What keel forget writes besides the rebuilt rows (src/write/forget.c,
 * docs/semantics.md "Forgetting"): each mentioning event's redacted
 * envelope, by its seq, and one tombstone. */
struct keel_redaction {
	int64_t seq;
	struct keel_str envelope; /* compacted, with "keelredacted":true */
};

/* What keel forget asks a store to find (forget_find): the events that
 * may name subject. */
struct keel_forget_find {
	struct keel_str subject;
	struct keel_str quoted; /* the subject as a JSON string */
	/* The event types whose events may name the subject through an entity
	 * operation alone, no row naming it and its text not in the envelope
	 * (keel_cartridge_rowless): of those timed within [from, to] (the
	 * subject's mentions), every event of an `always` type, and every
	 * event of a `redacted` type whose envelope holds "keelredacted". */
	const struct keel_str *always, *redacted;
	size_t nalways, nredacted;
	int64_t from, to;
};

/* An entity's mentions of one transaction mended by keel forget: its
 * mentions recorded at recorded_at get first_seen and last_seen (what
 * the transaction's events still say of it, their kind unchanged), or
 * go when gone (none of them mentions it any more). */
struct keel_mention_fix {
	struct keel_str subject;
	int64_t recorded_at;
	bool gone;
	int64_t first_seen, last_seen;
};

#define KEEL_SUBJECT_HASH_LEN 64 /* SHA-256 in lowercase hex */

/* What was forgotten: the subject only as its SHA-256 (so its bytes are
 * not kept), when, by whom, and how much went. */
struct keel_tombstone {
	struct keel_str tenant;
	char subject_hash[KEEL_SUBJECT_HASH_LEN + 1];
	int64_t forgotten_at;
	struct keel_str forgotten_by;
	uint64_t events; /* envelopes redacted */
	uint64_t rows;	 /* facts, relations and entities removed */
};

/* Whether scope (NULL: everything) covers the rows of kind and name. */
bool keel_replace_scope_covers(const struct keel_replace_scope *scope,
			       enum keel_row_kind kind, struct keel_str name);

/* Which subjects may answer a finding read (keel entities, keel search):
 * the store's candidates, each then confirmed by an ordinary scan
 * (src/read/find.c). Strings are views the caller keeps alive. */
struct keel_candidates {
	struct keel_str tenant; /* required */
	struct keel_str after;	/* optional: only subjects bytewise after it */
	/* entity_subjects: subjects with a mention; optionally beginning
	 * with prefix, optionally with a mention that gives kind */
	struct keel_str prefix;
	struct keel_str kind;
	/* fact_subjects: subjects with an assertion of predicate whose value
	 * (compact JSON) is value, both required */
	struct keel_str predicate;
	struct keel_str value;
	/* fact_subjects: the time the caller reads at, and as known when. A
	 * store may leave out a subject whose row at `at` (recorded by
	 * known_at) does not hold the value, and should when it can do so
	 * cheaply, inside the same index walk: it saves the caller reading
	 * every subject that ever held the value. */
	int64_t at;
	bool known_at_set;
	int64_t known_at;
	size_t limit; /* at most this many (> 0) */
};

/* The subject range of q for a store that ranges over an index: subjects
 * above *lo (or at it, when *lo_inclusive) and, when hi->len, below hi.
 * lo is absent (no lower bound) when q has neither after nor prefix. hi
 * is the least string above every string beginning with the prefix (the
 * prefix with trailing 0xff bytes dropped and its last byte raised), left
 * empty when there is none. */
void keel_candidates_range(const struct keel_candidates *q, struct keel_str *lo,
			   bool *lo_inclusive, struct keel_buf *hi);

/* A tenant's recorded cartridge (docs/cartridges.md, "The recorded
 * cartridge"): what the tenant's rows were built with. text is the
 * compacted JSON of a JSON cartridge, absent for a shared object (which
 * must then be given again). */
struct keel_cartridge_record {
	struct keel_str name, version, hash, text;
	int64_t recorded_at;
};

/* How far a partition of a log is applied (keel consume, docs/log.md):
 * every message of partition `partition` of log `log` up to stream
 * sequence seq, written by the holder of fencing token `token` (the
 * revision of its lease). Stores that take concurrent writers keep one
 * row a (log, partition) and write it in the same transaction as the
 * rows it covers. */
struct keel_log_position {
	struct keel_str log;
	uint32_t partition;
	uint64_t seq;
	uint64_t token;
	int64_t recorded_at; /* when it was written (reading) */
};
typedef int (*keel_log_position_fn)(void *ud, const struct keel_log_position *p);

/* Return non-zero to stop the scan (the scan then returns that value). */
typedef int (*keel_scan_fn)(void *ud, const struct keel_record *r);

struct keel_store;

struct keel_store_ops {
	const char *scheme;   /* "memory", "sqlite", "mysql", "postgres" */
	const char *scheme_alias; /* optional: another name ("postgresql") */
	const char *url_form; /* for messages: "sqlite:PATH" */
	/* url is the whole URL; on failure returns an error and writes a one-
	 * line message into err (the store is not created). existing: the
	 * caller only reads, so a store that would otherwise be created (a
	 * new file) is refused with KEEL_ENOTFOUND instead; a store that
	 * always starts empty (memory) opens as usual. */
	int (*open)(const char *url, bool existing, struct keel_store **out,
		    struct keel_buf *err);
	/* Stops the store's background work (if any), then frees it. */
	void (*close)(struct keel_store *s);

	int (*begin)(struct keel_store *s);
	/* 0 once committed; KEEL_EUNCERTAIN when it failed without telling
	 * whether it committed (the transaction is over either way); another
	 * error leaves the transaction to be rolled back. */
	int (*commit)(struct keel_store *s);
	int (*rollback)(struct keel_store *s);
	/* Optional. From now on each commit of this handle returns only once
	 * what it committed survives a power cut (keel serve's writer, which
	 * answers after the commit). NULL: the store's commits already do as
	 * much as they can (MySQL: the server's innodb_flush_log_at_trx_commit
	 * decides), or nothing survives anyway (memory). */
	void (*durable_commits)(struct keel_store *s);

	/* Batches within a transaction (docs/semantics.md, "Batches, commits
	 * and failures"): savepoint before each batch's writes, release after
	 * them, rollback_to_savepoint to drop only the failing batch and end
	 * its savepoint (no release follows it). A store whose append cannot
	 * fail part way (memory) may leave them NULL. */
	int (*savepoint)(struct keel_store *s);
	int (*release)(struct keel_store *s);
	int (*rollback_to_savepoint)(struct keel_store *s);

	/* The latest recorded_at in the store's log (0 when empty), read
	 * when a transaction begins so that recorded_at never decreases along
	 * the log, even across processes (keel_store_recorded_at). */
	int (*last_recorded_at)(struct keel_store *s, int64_t *out);

	/* For a store that takes several writers at once (MySQL,
	 * PostgreSQL), called instead of last_recorded_at when a transaction
	 * begins: starts the transaction, enters the writers' gate that
	 * settle waits on (held until the transaction ends), and gives the
	 * floor its recorded_at must pass: the log's latest recorded_at or,
	 * if later, the database server's clock read once inside the gate.
	 * One clock for every writer and reader, whatever their machines'
	 * clocks say (docs/semantics.md, "Known-at answers stand"). */
	int (*writer_gate)(struct keel_store *s, int64_t *floor);

	/* Returns once no write transaction open when it was called can
	 * still record at or before known_at, a moment already past, so that
	 * a read begun after it sees everything that will ever be recorded
	 * by then (keel_store_settle). It may return at once, doing nothing,
	 * when this handle cannot tell (its own transaction open, a file it
	 * cannot write). NULL: the store has nothing to wait for (memory). */
	int (*settle)(struct keel_store *s, int64_t known_at);

	/* For each event whose identity (tenant, source, id) is in the log:
	 * status becomes KEEL_EV_DUPLICATE, stored_hash the logged hash and
	 * stored_seq the logged seq. One batched
	 * lookup per (at most) thousand events. The only stored state the
	 * write path reads. */
	int (*seen_ids)(struct keel_store *s, struct keel_batch_event **ev, size_t n);
	/* Appends a batch: logs a->events (setting ev->seq), then inserts
	 * a->rows and a->mentions, all in order. Nothing is updated. */
	int (*append)(struct keel_store *s, const struct keel_append *a);

	/* Reading. tenants: malloc'd NUL-terminated names, sorted bytewise. */
	int (*tenants)(struct keel_store *s, struct keel_ptrvec *out);
	int (*scan)(struct keel_store *s, const struct keel_scan *q, keel_scan_fn fn,
		    void *ud);
	/* Finding (src/read/find.c): up to q->limit distinct subjects that match
	 * q, in bytewise order, appended to out as malloc'd NUL-terminated
	 * strings. Rows are matched as written, whatever their time or when
	 * they were recorded (fact_subjects may narrow by time, see struct
	 * keel_candidates): the caller confirms each subject with a scan.
	 * Each walks one range of an index (docs/stores.md, "Finding"). */
	int (*entity_subjects)(struct keel_store *s, const struct keel_candidates *q,
			       struct keel_ptrvec *out);
	int (*fact_subjects)(struct keel_store *s, const struct keel_candidates *q,
			     struct keel_ptrvec *out);
	/* Derived data a store keeps for finding, brought up to date by
	 * readers (SQLite's current rows and spans, docs/store-sqlite.md):
	 * folds at most `most` more rows into it, in one short transaction of
	 * its own, outside any other; *left is true when rows remain. NULL:
	 * the store keeps none. keel serve's writer calls it when idle. */
	int (*fold)(struct keel_store *s, int64_t most, bool *left);
	/* Row counts of one tenant: entities, facts, relations, events, of
	 * what was recorded by known_at (KEEL_TIME_INF: everything). */
	int (*counts)(struct keel_store *s, struct keel_str tenant, int64_t known_at,
		      uint64_t out[4]);

	/* Replay and bulk loads (src/write/replay.c, docs/replay.md). Inside the
	 * open transaction: deletes the tenant's rows and mentions that scope
	 * covers (NULL: all of them), then appends a (its rows and mentions
	 * exactly those again, with the recorded_at they carry; a->events, if
	 * any, logged as by append). The log is otherwise kept. log_events is
	 * the number of events the tenant's log held when the state was
	 * built: a store that cannot hold the log still for the whole
	 * transaction checks it under a lock and fails if it changed. With
	 * scope->more, a later part of the same replace: nothing deleted,
	 * nothing checked, a appended. note
	 * gets one line saying how the rows were written (e.g. the bulk
	 * method and any fallback). */
	int (*replace_tenant)(struct keel_store *s, struct keel_str tenant,
			      const struct keel_replace_scope *scope,
			      const struct keel_append *a, uint64_t log_events,
			      struct keel_buf *note);
	/* Forgetting (src/write/forget.c). Inside the open transaction, before the
	 * tenant is rebuilt with replace_tenant: each event r[i].seq of the
	 * tenant gets r[i].envelope in place of its logged envelope, its
	 * hash kept (a redelivery stays a plain duplicate); then t, if not
	 * NULL (after the rebuild), is written, replacing an earlier
	 * tombstone of the same subject. A
	 * store with files makes what the transaction deletes or overwrites
	 * unreadable there (SQLite: secure_delete). */
	int (*forget)(struct keel_store *s, struct keel_str tenant,
		      const struct keel_redaction *r, size_t n,
		      const struct keel_tombstone *t);
	/* Forgetting without a rebuild (src/write/forget.c). forget_find:
	 * each event of the tenant, once and by seq, that asserted a fact or
	 * relation row naming f->subject (as its subject, a relation's
	 * object, or a fact's value equal to f->quoted), or whose logged
	 * envelope holds the subject's bytes or a backslash (an escape that
	 * may spell them), or that f's types and span name (struct
	 * keel_forget_find): found by the rows' indexes and by a scan of the
	 * envelopes inside the engine, so that only candidates reach the
	 * caller, which parses them. Records as an event scan gives them.
	 * Inside the open transaction; fn may not call the store.
	 * forget_rows: inside the open transaction, deletes the tenant's
	 * rows naming subject (those forget_find found the events of) and
	 * its mentions, mends the mentions fix[] names, and keeps what the
	 * store derives from rows right for the keys it touched (SQLite's
	 * current rows and spans); every other row stays as it is, seq and
	 * all. *removed: the fact and relation rows deleted. */
	int (*forget_find)(struct keel_store *s, struct keel_str tenant,
			   const struct keel_forget_find *f, keel_scan_fn fn, void *ud);
	int (*forget_rows)(struct keel_store *s, struct keel_str tenant,
			   struct keel_str subject, struct keel_str quoted,
			   const struct keel_mention_fix *fix, size_t n, uint64_t *removed);
	/* The tombstone of (tenant, subject_hash): 0 and *out filled (its
	 * strings in buf), or KEEL_ENOTFOUND with no message when none. */
	int (*tombstone)(struct keel_store *s, struct keel_str tenant,
			 const char *subject_hash, struct keel_tombstone *out,
			 struct keel_buf *buf);
	/* Optional. After a forget's commit: leaves no copy of the old bytes
	 * in the store's files (SQLite: a TRUNCATE checkpoint of the WAL). */
	int (*scrub)(struct keel_store *s);
	/* The tenant's recorded cartridge: 0 with *out set (its strings
	 * copied into hold, valid until hold is reset or freed), or
	 * KEEL_ENOTFOUND when it has none (a new tenant, or one logged by a
	 * Keel that did not record cartridges). */
	int (*cartridge_get)(struct keel_store *s, struct keel_str tenant,
			     struct keel_cartridge_record *out, struct keel_arena *hold);
	/* Inside the open transaction: records r as the cartridge of each
	 * of the n tenants (an ingester records every tenant new in a
	 * transaction at once: with many tenants, one statement rather than
	 * one a tenant). replace false: the tenants have none (their first
	 * ingestion), and one recorded meanwhile by another writer fails
	 * the call; true: it replaces the one recorded (a replay with a new
	 * cartridge). */
	int (*cartridge_put)(struct keel_store *s, const struct keel_str *tenants,
			     size_t n, const struct keel_cartridge_record *r, bool replace);
	/* Optional. What a cheap read cannot see that makes the store
	 * unusable (SQLite: its file deleted or replaced under it). 0 or
	 * an error with the message set; keel_store_check calls it. */
	int (*check)(struct keel_store *s);
	/* Optional. Set up a connection that writes alongside others
	 * (keel ingest --workers): e.g. READ COMMITTED on MySQL. */
	int (*worker_init)(struct keel_store *s);
	/* Optional. Appends the store's own counters to out in Prometheus
	 * text format (GET /metrics): e.g. the SQLite store's background
	 * checkpoints. Called from any thread while another uses the store,
	 * so it reads only atomics. */
	void (*metrics)(struct keel_store *s, struct keel_buf *out);
	/* Optional. The schema version the store had when this handle opened
	 * it (0: none, a new store) and the one it has now, which opening
	 * brought it to (keel migrate). */
	int (*schema_versions)(struct keel_store *s, int *was, int *now);
	/* Optional (stores that take concurrent writers; docs/log.md,
	 * "Fencing"). Inside the open transaction: locks the row of
	 * (p->log, p->partition) (a writer doing the same waits for this
	 * transaction to end); fails with KEEL_EFENCED, the message naming
	 * both tokens, when the stored token is greater than p->token; else
	 * writes p->token, p->recorded_at and the greater of the stored
	 * sequence and p->seq, and sets *stored to that sequence (p->seq
	 * when there was no row). */
	int (*log_position)(struct keel_store *s, const struct keel_log_position *p,
			    uint64_t *stored);
	/* Optional, with log_position: every stored position of log, by
	 * partition. */
	int (*log_positions)(struct keel_store *s, struct keel_str log,
			     keel_log_position_fn fn, void *ud);
	/* Several connections may write at once (tenants run in parallel). */
	bool concurrent_writers;
	/* The store keeps every logged envelope and hashes it when it needs
	 * the hash (a repeated id, a scan): ingesters then leave each event's
	 * hash to keel_batch_event_hash instead of hashing every envelope. */
	bool hashes_on_demand;
};

struct keel_store {
	const struct keel_store_ops *ops;
	struct keel_buf errmsg;
	uint64_t statements; /* SQL statements executed */
	bool in_tx;
	/* The longest compacted envelope the store can write (0: no limit),
	 * and why, for the message that rejects a longer one: an event the
	 * store cannot take must be rejected alone, before its batch, not
	 * fail the batch (docs/store-mysql.md, "Large events"). Set when
	 * the store opens; ingesters read it when they are created. */
	size_t max_envelope;
	const char *max_envelope_why;
	/* The store's whole state lives in this handle (memory:,
	 * sqlite::memory:): another handle opened from the same URL is
	 * another, empty store, so every reader must share this one. Set
	 * when the store opens. */
	bool state_in_handle;
	/* The floor of recorded_at: the latest one this handle gave or read
	 * from the log (keel_store_recorded_at). */
	int64_t recorded_floor;
	/* The URL the store was opened with (keel_store_base_init): for
	 * messages, and more connections to the same store are opened with
	 * it (KEEL_INGEST_WORKERS). */
	char *url;
};

/* For backends: initialise the base (url: the URL being opened, copied),
 * set the message. */
void keel_store_base_init(struct keel_store *s, const struct keel_store_ops *ops,
			  const char *url);
void keel_store_base_free(struct keel_store *s);
int keel_store_fail(struct keel_store *s, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Wrappers the library calls. */
/* The URL s was opened with ("" if it was not opened by keel_store_open). */
const char *keel_store_url(const struct keel_store *s);
/* A store's migration says what it is doing (keel_store_migrate_progress,
 * keel.h): one line, passed on to the process's progress function, if any. */
void keel_store_migrating(const char *what);
int keel_store_begin(struct keel_store *s);
int keel_store_commit(struct keel_store *s);
int keel_store_rollback(struct keel_store *s);
/* See the ops' durable_commits. */
void keel_store_durable_commits(struct keel_store *s);
int keel_store_savepoint(struct keel_store *s);
int keel_store_release(struct keel_store *s);
int keel_store_rollback_to_savepoint(struct keel_store *s);
int keel_store_seen_ids(struct keel_store *s, struct keel_batch_event **ev, size_t n);
int keel_store_append(struct keel_store *s, const struct keel_append *a);
/* The recorded_at for what the open transaction appends next: the
 * store's clock (microseconds since the epoch), never less than any
 * recorded_at the store's log holds or this handle gave before. */
int64_t keel_store_recorded_at(struct keel_store *s);
/* Makes a read known at known_at give the answer every later read known
 * at it gives (docs/semantics.md, "Known-at answers stand"): when
 * known_at is past, waits for the write transactions that may still
 * record at or before it (the ops' settle). */
int keel_store_settle(struct keel_store *s, int64_t known_at);
int keel_store_tenants(struct keel_store *s, struct keel_ptrvec *out);
/* The tenants as known at known_at: those with something recorded by
 * then (the counts keel stats gives), every one at KEEL_TIME_INF. */
int keel_store_tenants_known(struct keel_store *s, int64_t known_at, struct keel_ptrvec *out);
/* 0 when tenant has something recorded by known_at (KEEL_TIME_INF: at
 * all), else KEEL_ENOTFOUND with the one answer every read and command
 * gives a tenant unknown to the store: tenant "T" not found (as known at
 * known_at). */
int keel_store_tenant_known(struct keel_store *s, struct keel_str tenant,
			    int64_t known_at);
int keel_store_scan(struct keel_store *s, const struct keel_scan *q, keel_scan_fn fn,
		    void *ud);
int keel_store_counts(struct keel_store *s, struct keel_str tenant, int64_t known_at,
		      uint64_t out[4]);
int keel_store_entity_subjects(struct keel_store *s, const struct keel_candidates *q,
			       struct keel_ptrvec *out);
int keel_store_fold(struct keel_store *s, int64_t most, bool *left);
int keel_store_fact_subjects(struct keel_store *s, const struct keel_candidates *q,
			     struct keel_ptrvec *out);
/* Whether the store answers, for health checks (keel serve's /healthz):
 * the backend's own check, then a cheap read (the counts of a tenant that
 * cannot exist). 0, or an error with the store's message set. */
int keel_store_check(struct keel_store *s);
/* Replay and bulk loads (src/write/replay.c). */
int keel_store_replace_tenant(struct keel_store *s, struct keel_str tenant,
			      const struct keel_replace_scope *scope,
			      const struct keel_append *a, uint64_t log_events,
			      struct keel_buf *note);
int keel_store_worker_init(struct keel_store *s);
/* Forgetting (src/write/forget.c); see the ops. */
int keel_store_forget(struct keel_store *s, struct keel_str tenant,
		      const struct keel_redaction *r, size_t n,
		      const struct keel_tombstone *t);
int keel_store_forget_find(struct keel_store *s, struct keel_str tenant,
			   const struct keel_forget_find *f, keel_scan_fn fn, void *ud);
int keel_store_forget_rows(struct keel_store *s, struct keel_str tenant,
			   struct keel_str subject, struct keel_str quoted,
			   const struct keel_mention_fix *fix, size_t n, uint64_t *removed);
int keel_store_tombstone(struct keel_store *s, struct keel_str tenant,
			 const char *subject_hash, struct keel_tombstone *out,
			 struct keel_buf *buf);
int keel_store_scrub(struct keel_store *s);
/* The tenant's recorded cartridge (see keel_store_ops.cartridge_get). */
int keel_store_cartridge_get(struct keel_store *s, struct keel_str tenant,
			     struct keel_cartridge_record *out, struct keel_arena *hold);
/* Records it inside the open transaction (keel_store_ops.cartridge_put). */
int keel_store_cartridge_put(struct keel_store *s, const struct keel_str *tenants,
			     size_t n, const struct keel_cartridge_record *r, bool replace);

/* Log positions (keel consume); see the ops. KEEL_EINVAL, with the
 * message set, on a store that keeps none. */
int keel_store_log_position(struct keel_store *s, const struct keel_log_position *p,
			    uint64_t *stored);
int keel_store_log_positions(struct keel_store *s, struct keel_str log,
			     keel_log_position_fn fn, void *ud);
bool keel_store_keeps_log_positions(const struct keel_store *s);

/* What the core asks a store before deciding how to use it. */
/* Readers must share this handle (see keel_store.state_in_handle). */
bool keel_store_state_in_handle(const struct keel_store *s);
/* Several handles may write at once (tenants in parallel). */
bool keel_store_concurrent_writers(const struct keel_store *s);
/* The store hashes logged envelopes when it needs the hash (see
 * keel_store_ops.hashes_on_demand). */
bool keel_store_hashes_on_demand(const struct keel_store *s);
/* Appends the store's own counters (Prometheus text), if it has any. */
void keel_store_metrics(struct keel_store *s, struct keel_buf *out);

/* The backends: each defines its ops table; store.c's registry lists
 * them. */
extern const struct keel_store_ops keel_store_memory_ops;
extern const struct keel_store_ops keel_store_sqlite_ops;
#ifdef KEEL_WITH_MYSQL
extern const struct keel_store_ops keel_store_mysql_ops;
#endif
#ifdef KEEL_WITH_POSTGRES
extern const struct keel_store_ops keel_store_postgres_ops;
#endif

#endif

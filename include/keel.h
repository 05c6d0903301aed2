/*
 * keel.h - the whole public API of libkeel.
 *
 * Keel turns streams of domain events (CloudEvents with a "tenant"
 * extension) into a temporal graph: entities, facts that hold over valid-time
 * intervals, and relations, each row traceable to the event behind it.
 *
 * Conventions:
 *  - Handles are opaque; each has a _free or _close that accepts NULL.
 *  - Functions return 0 on success or a negative KEEL_E* code. Detail is in
 *    the handle's message (keel_store_errmsg, keel_ingest_errmsg) or, for
 *    constructors, in *errmsg, which the caller frees with free().
 *  - Strings are UTF-8 byte strings; "const char *" inputs are NUL-terminated
 *    unless a length is passed beside them.
 *  - Times are signed 64-bit microseconds since 1970-01-01T00:00:00Z.
 */
#ifndef KEEL_H
#define KEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every function of this header is marked KEEL_API: libkeel.so exports
 * these and nothing else (it is built with hidden visibility). */
#if defined(__GNUC__) || defined(__clang__)
#define KEEL_API __attribute__((visibility("default")))
#else
#define KEEL_API
#endif

/* The version of this header: the one version of Keel (the build takes it
 * from here). keel_version() answers the version of the library a program
 * runs with, which can differ from the header it was compiled with. */
#define KEEL_VERSION "0.1.0"
KEEL_API const char *keel_version(void);

/* Options structs (keel_ingest_options, keel_replay_options,
 * keel_export_options, keel_generate_options, keel_server_options) begin
 * with `size_t size`, which the caller sets to the size of the struct it
 * was compiled with:
 *
 *     struct keel_export_options o = {.size = sizeof o, .format = ...};
 *
 * Later versions only add fields at the end, so a program built against an
 * older header keeps working: the fields it does not know take their
 * defaults (zero). A size of 0 (the field left unset) or larger than the
 * library knows is refused with KEEL_EINVAL. */

/* Errors: numbers never change; 0 is success. */
#define KEEL_ERRNO_MAP(XX)                                                \
	XX(INVAL, -1, "invalid argument")                                 \
	XX(STORE, -2, "store error")                                      \
	XX(SCHEMA, -3, "unsupported schema version")                      \
	XX(CARTRIDGE, -4, "invalid cartridge")                            \
	XX(IO, -5, "input/output error")                                  \
	XX(URL, -6, "invalid store url")                                  \
	XX(REJECTED, -7, "event rejected")                                \
	XX(NOTFOUND, -8, "not found")                                     \
	XX(DUMP, -9, "invalid dump record")                               \
	XX(FORGOTTEN, -10, "forgotten")                                   \
	XX(UNCERTAIN, -11, "commit outcome unknown")                      \
	XX(FENCED, -12, "fenced: another process owns the partition")

enum keel_error {
	KEEL_OK = 0,
#define KEEL_XX(name, num, msg) KEEL_E##name = (num),
	KEEL_ERRNO_MAP(KEEL_XX)
#undef KEEL_XX
};

/* KEEL_EUNCERTAIN: a commit failed in a way that leaves unknown whether
 * what it held was committed (MySQL: the connection lost while COMMIT was
 * under way; SQLite: the commit done, but its log could not be synced,
 * so a power cut may undo it). Sending the same events again is safe:
 * those already logged are answered as duplicates. */

/* Short name ("KEEL_ESTORE") and message ("store error") of a code. */
KEEL_API const char *keel_err_name(int code);
KEEL_API const char *keel_strerror(int code);

/* ---------------------------------------------------------------- time */

#define KEEL_TIME_INF INT64_MAX /* open end of an interval */

/* Parses an RFC 3339 timestamp with a zone offset. Fractional digits past
 * the sixth are truncated; years outside 0001-9999, impossible dates and
 * leap seconds are rejected. On failure returns KEEL_EINVAL and, if why is
 * not NULL, points it at a description of the first thing wrong, reading
 * left to right (a value out of range is named: "month 13 out of range
 * 01-12"); it stays valid until the calling thread's next parse. */
KEEL_API int keel_time_parse(const char *s, size_t len, int64_t *out, const char **why);

/* Writes the canonical form (YYYY-MM-DDTHH:MM:SSZ, or with .ffffff when the
 * microseconds are not zero) into buf and returns its length; KEEL_TIME_INF
 * is written as "null". buf must hold KEEL_TIME_BUFSZ bytes. */
#define KEEL_TIME_BUFSZ 40
KEEL_API size_t keel_time_format(int64_t t, char *buf);

/* The current time. */
KEEL_API int64_t keel_time_now(void);

/* ---------------------------------------------------------------- JSON */

/* Writes s[0..len) to f as a JSON string literal, exactly as Keel writes
 * strings in its own output (docs/json.md): '"', '\\' and control
 * characters escaped, each byte that is not part of well-formed UTF-8
 * replaced by U+FFFD, so what is written is always valid JSON. Returns 0,
 * or KEEL_EIO when the write fails. */
KEEL_API int keel_json_write_string(FILE *f, const char *s, size_t len);

/* The time a read looks at (keel show --at, GET ...?at=): "now" (the
 * current time) or an RFC 3339 timestamp as keel_time_parse takes it. */
KEEL_API int keel_time_parse_at(const char *s, size_t len, int64_t *out, const char **why);

/* --------------------------------------------------------------- stores */

struct keel_store;

/* Opens a store by URL: "memory:", "sqlite:PATH", "mysql://...". NULL or ""
 * means keel_store_default_url(). The schema is created on first use. On
 * failure *out is NULL and *errmsg (if errmsg is not NULL) holds a one-line
 * message to free(). */
KEEL_API int keel_store_open(const char *url, struct keel_store **out, char **errmsg);
/* As keel_store_open, for a caller that only reads: a store that does not
 * exist yet is not created but refused with KEEL_ENOTFOUND (a SQLite file
 * that is not there; a MySQL database always must exist). A memory store
 * always starts empty and opens as usual. */
KEEL_API int keel_store_open_existing(const char *url, struct keel_store **out, char **errmsg);
/* The URL a NULL or "" URL means: the KEEL_STORE environment variable, or
 * "sqlite:keel.db" without it (docs/cli.md). */
KEEL_API const char *keel_store_default_url(void);
KEEL_API void keel_store_close(struct keel_store *s);
/* The message of the last failure on s; never NULL. */
KEEL_API const char *keel_store_errmsg(const struct keel_store *s);
/* The number of SQL statements s has executed (0 for the memory store). */
KEEL_API uint64_t keel_store_statements(const struct keel_store *s);
/* The schema version s had when it was opened (0: a new store, created
 * by the open) and the one it has now: opening a store for writing
 * migrates an older schema in place (keel migrate, docs/store-sqlite.md).
 * KEEL_EINVAL for a store without a schema (memory:). */
KEEL_API int keel_store_schema_versions(struct keel_store *s, int *was, int *now);
/* Process-wide: fn (NULL: none) is told what a migration of a store's
 * schema is doing as it goes, one short line of text for each part of
 * each step ("sqlite:x.db: schema 11 to 12, step 12, part 2 of 8:
 * CREATE TABLE fact_rows_by_id"), so that keel migrate can show a long
 * migration's progress on a terminal. Called on the thread that opens
 * the store. */
KEEL_API void keel_store_migrate_progress(void (*fn)(void *ud, const char *what),
					  void *ud);

/* ----------------------------------------------------------- cartridges */

struct keel_cartridge;
struct keel_ctx;   /* what a handler writes through (one event) */
struct keel_event; /* the event a handler reads */

/* The built-in cartridge's name. It runs only when named: a tenant's
 * cartridge is the one its store recorded, else the one a caller gives. */
#define KEEL_BUILTIN_CARTRIDGE "fleet"

/* Loads a cartridge: the built-in name "fleet", a path to a JSON cartridge,
 * or a path ending in ".so" to a shared object exporting
 * int keel_cartridge_init(struct keel_cartridge *c). A bad cartridge fails
 * here with a message naming the event type, the operation and the field. */
KEEL_API int keel_cartridge_load(const char *name_or_path, struct keel_cartridge **out,
				 char **errmsg);
/* Compiles a declarative JSON cartridge from memory. */
KEEL_API int keel_cartridge_compile(const char *json, size_t len,
				    struct keel_cartridge **out, char **errmsg);
KEEL_API void keel_cartridge_free(struct keel_cartridge *c);
KEEL_API const char *keel_cartridge_name(const struct keel_cartridge *c);
/* Its version ("" when it has none: a shared object). */
KEEL_API const char *keel_cartridge_version(const struct keel_cartridge *c);
/* What identifies its content (docs/cartridges.md, "The recorded
 * cartridge"): "sha256:" and the hex SHA-256 of a JSON cartridge's
 * compacted text (so reformatting it changes nothing), or of a shared
 * object's file; "" for a cartridge built with keel_cartridge_new. A store
 * records name, version and hash (and a JSON cartridge's text) for each
 * tenant when it first ingests, and refuses a cartridge that differs in
 * any of them. */
#define KEEL_CARTRIDGE_HASH_BUFSZ 72
KEEL_API const char *keel_cartridge_hash(const struct keel_cartridge *c);
/* The cartridge s recorded for tenant, compiled from the text the store
 * keeps (for a caller that runs a tenant's events itself). On failure
 * *out is NULL and keel_store_errmsg(s) says why: KEEL_ENOTFOUND, the
 * tenant has none; KEEL_ECARTRIDGE, it is a shared object (whose code a
 * store does not keep) or its text no longer compiles. */
KEEL_API int keel_cartridge_recorded(struct keel_store *s, const char *tenant,
				     struct keel_cartridge **out);

/* The C handler API beneath the declarative form. A handler is called once
 * per accepted event of its type; it returns 0, or calls keel_ctx_reject and
 * returns its result to reject the event. Nothing a handler asserts takes
 * effect unless the whole handler succeeds. */
typedef int (*keel_handler_fn)(struct keel_ctx *ctx, const struct keel_event *ev,
			       void *userdata);

/* Creates an empty cartridge to which handlers are added. */
KEEL_API struct keel_cartridge *keel_cartridge_new(const char *name, const char *version);
/* Registers fn for an event type (copied). KEEL_EINVAL if the type already
 * has a handler. */
KEEL_API int keel_cartridge_on(struct keel_cartridge *c, const char *event_type,
			       keel_handler_fn fn, void *userdata);

/* What an event field holds, as a template renders it. */
enum keel_value_type {
	KEEL_VALUE_NULL,
	KEEL_VALUE_BOOL,
	KEEL_VALUE_NUMBER,
	KEEL_VALUE_STRING,
	KEEL_VALUE_ARRAY,
	KEEL_VALUE_OBJECT,
};
struct keel_value {
	enum keel_value_type type;
	const char *text; /* string: decoded; number: lexeme; bool: true/false;
			     null: "null"; array/object: compact JSON */
	size_t len;
	const char *json; /* the value as compact JSON text */
	size_t json_len;
};

/* Looks up an RFC 6901 pointer in the envelope ("/data/vehicle_id").
 * Returns 0, or KEEL_ENOTFOUND. The texts live as long as the call to the
 * handler. */
KEEL_API int keel_event_get(const struct keel_event *ev, const char *pointer,
			    struct keel_value *out);
KEEL_API const char *keel_event_type(const struct keel_event *ev);
KEEL_API const char *keel_event_id(const struct keel_event *ev);
KEEL_API const char *keel_event_tenant(const struct keel_event *ev);
KEEL_API int64_t keel_event_time(const struct keel_event *ev);

/* Operations, all at the event's time. Strings carry explicit lengths and
 * are copied. value_json is compact JSON text, or NULL for "no value". */
KEEL_API int keel_ctx_entity(struct keel_ctx *ctx, const char *subject,
			     size_t subject_len, const char *kind, size_t kind_len);
KEEL_API int keel_ctx_fact(struct keel_ctx *ctx, const char *subject, size_t subject_len,
			   const char *predicate, size_t predicate_len,
			   const char *value_json, size_t value_len);
KEEL_API int keel_ctx_unset(struct keel_ctx *ctx, const char *subject, size_t subject_len,
			    const char *predicate, size_t predicate_len);
KEEL_API int keel_ctx_link(struct keel_ctx *ctx, const char *subject, size_t subject_len,
			   const char *relation, size_t relation_len, const char *object,
			   size_t object_len);
KEEL_API int keel_ctx_unlink(struct keel_ctx *ctx, const char *subject,
			     size_t subject_len, const char *relation,
			     size_t relation_len, const char *object, size_t object_len);
/* Rejects the event with a message; returns KEEL_EREJECTED. */
KEEL_API int keel_ctx_reject(struct keel_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------ ingestion */

struct keel_ingest;

/* Called for every rejected event: where it was, its id if it had a valid
 * one (else NULL), the full message, and the input as received (possibly
 * truncated to the configured maximum line length). */
typedef void (*keel_reject_fn)(void *userdata, uint64_t position, const char *id,
			       const char *message, const char *input,
			       size_t input_len);

/* Called for every conflicting duplicate (KEEL_INGEST_CONFLICTING below):
 * an event whose identity (tenant, source, id; source "" when it has
 * none) was logged before, or came earlier in this input, with another
 * envelope. It is skipped, not rejected. The message names both
 * positions: `line 9: event "1" from "/b": conflicting duplicate: its
 * envelope differs from that of line 4`, or `... from that of the event
 * already in the store (seq 17)` when the first came before this
 * ingester's last flush. envelope is the event's, compacted. Called when
 * its batch is written (from a worker's thread in KEEL_INGEST_WORKERS
 * mode, one call at a time), before the commit. */
typedef void (*keel_conflict_fn)(void *userdata, uint64_t position, const char *source,
				 const char *id, const char *message, const char *envelope,
				 size_t envelope_len);

/* What became of an event that was not rejected, once its batch is
 * committed. The counts of struct keel_report group them the same way:
 * accepted includes UNHANDLED, duplicates includes CONFLICTING. */
enum keel_ingest_outcome {
	KEEL_INGEST_ACCEPTED,	 /* logged, its operations applied */
	KEEL_INGEST_UNHANDLED,	 /* logged; no handler for its type */
	KEEL_INGEST_DUPLICATE,	 /* logged before (or earlier in the batch) alike */
	KEEL_INGEST_CONFLICTING, /* logged before with a different envelope */
};

/* Called after each successful commit, once for every event of the
 * committed batches that was not rejected, in the order keel_ingest_add
 * took them. seq is that order, from 0 within the commit: a caller that
 * feeds several sources into one batch (whose positions may repeat) tells
 * them apart by it. Not called for a batch that failed (nothing of it was
 * written), nor before the commit (a process killed before it never
 * told). In KEEL_INGEST_WORKERS mode it is called from the workers'
 * threads; KEEL_INGEST_BULK does not call it. */
typedef void (*keel_outcome_fn)(void *userdata, uint64_t position, size_t seq,
				enum keel_ingest_outcome outcome);

/* The defaults that options left 0 take, for callers that show them (the
 * CLI's help) or compare against them. */
#define KEEL_DEFAULT_COMMIT_INTERVAL_MS 1000 /* keel_ingest_options */
#define KEEL_COMMIT_EVERY_BATCH UINT32_MAX
#define KEEL_DEFAULT_BATCH 500		    /* events per transaction */
#define KEEL_DEFAULT_MAX_LINE (1024 * 1024) /* bytes of one event: 1 MiB */

/* How an ingester writes (docs/replay.md). Every mode takes the same lines
 * with the same rules and reject messages, and gives the same dump. */
enum keel_ingest_mode {
	/* Batches of `batch` events, each committed when it fills (and on
	 * keel_ingest_flush). The default; the only mode of live input. */
	KEEL_INGEST_STREAMING,
	/* Tenants new to the store: every tenant is built in memory and all
	 * of them, events included, are written in one transaction by
	 * keel_ingest_finish; nothing is written before. A tenant that
	 * already has events in the store fails the load (KEEL_EINVAL) before
	 * anything is written. `batch` is ignored. */
	KEEL_INGEST_BULK,
	/* `workers` threads, each with its own connection to the store,
	 * opened with the URL s was opened with. The input is partitioned by
	 * tenant, never by subject: a tenant goes to the worker with the
	 * fewest tenants (then lines) when it is first seen and stays there,
	 * so its events keep their order. Only for stores that take
	 * concurrent writers (MySQL); keel_ingest_new fails with KEEL_EINVAL
	 * on others. */
	KEEL_INGEST_WORKERS,
};

struct keel_ingest_options {
	size_t size; /* sizeof the struct (see "Options structs" above) */
	/* Borrowed. Runs for every tenant whose recorded cartridge it is,
	 * and for tenants that have none (new ones, or a store made by an
	 * older Keel), for which the store records it with their first
	 * events. NULL: each tenant's recorded cartridge, compiled from the
	 * text the store keeps. Every other tenant's events are refused
	 * (keel_ingest_add; docs/cartridges.md, "The recorded cartridge"). */
	const struct keel_cartridge *cartridge;
	size_t batch;			 /* events per transaction; 0 = KEEL_DEFAULT_BATCH */
	size_t max_line;		 /* bytes; 0 = KEEL_DEFAULT_MAX_LINE */
	const char *position_word;	 /* "line" (default) or "index" */
	/* Called from one thread at a time: in input order, except in
	 * KEEL_INGEST_WORKERS mode (in order within each tenant). */
	keel_reject_fn on_reject;	 /* may be NULL */
	void *reject_userdata;
	keel_outcome_fn on_outcome;	 /* may be NULL */
	void *outcome_userdata;
	enum keel_ingest_mode mode;	 /* 0: KEEL_INGEST_STREAMING */
	unsigned workers;		 /* KEEL_INGEST_WORKERS: 0 = 2 */
	/* A commit holds every batch (each atomic, behind its own
	 * savepoint) written within this many milliseconds of the
	 * transaction's first; keel_ingest_flush always commits
	 * (docs/semantics.md, "Batches, commits and failures"). 0 =
	 * KEEL_DEFAULT_COMMIT_INTERVAL_MS; KEEL_COMMIT_EVERY_BATCH: one commit
	 * a batch. */
	uint32_t commit_interval_ms;
	keel_conflict_fn on_conflict; /* may be NULL */
	void *conflict_userdata;
};

struct keel_report {
	uint64_t read;        /* events offered */
	uint64_t accepted;    /* logged (includes unhandled) */
	uint64_t duplicates;  /* skipped (includes conflicting) */
	uint64_t conflicting; /* duplicates whose envelope differs */
	uint64_t unhandled;   /* accepted, type unknown to the cartridge */
	uint64_t rejected;
	uint64_t rows_inserted; /* assertions written (rows are never updated) */
	uint64_t commits;
	uint64_t batches;
	uint64_t statements; /* SQL statements executed by the store */
};

/* Creates an ingester writing into s (borrowed; must outlive it) in the
 * mode o->mode says. On failure *out is NULL and keel_store_errmsg(s)
 * says why (KEEL_EINVAL for options the store does not allow). */
KEEL_API int keel_ingest_new(struct keel_store *s, const struct keel_ingest_options *o,
		    struct keel_ingest **out);
/* Offers one envelope (one NDJSON line without its newline) found at
 * position (1-based line or 0-based index). A bad envelope is rejected
 * through on_reject and does not fail the call. An event of a tenant the
 * ingester has no cartridge for (none given and none recorded, or one
 * given that is not the recorded one) is rejected through on_reject too,
 * and the call returns KEEL_ECARTRIDGE with the same message in
 * keel_ingest_errmsg: the caller may stop (keel ingest does) or go on
 * with other tenants' events (keel serve does). When a batch is full it is
 * written, behind its own savepoint, and committed once the transaction is
 * commit_interval_ms old; a store failure returns KEEL_ESTORE (KEEL_EINVAL
 * for a bulk load refused), that batch alone is rolled back (the batches
 * before it are committed) and keel_ingest_errmsg names its range of
 * positions. The same holds when the store fails while an event is
 * offered (reading its tenant's recorded cartridge): the open batch is
 * dropped unwritten, so no event offered before the failure is committed
 * by a later flush. In KEEL_INGEST_WORKERS mode a worker's
 * failure is returned by a later call. */
KEEL_API int keel_ingest_add(struct keel_ingest *ing, const char *text, size_t len,
		    uint64_t position);
/* Rejects an input line that was longer than max_line (not buffered). */
KEEL_API int keel_ingest_add_too_long(struct keel_ingest *ing, uint64_t position,
			     const char *head, size_t head_len);
/* Commits every event offered so far and returns once it is committed (in
 * KEEL_INGEST_WORKERS mode: once every worker has committed, every
 * rejection reported). KEEL_INGEST_BULK writes nothing before
 * keel_ingest_finish: there it does nothing. A commit (here, or in
 * keel_ingest_add) whose outcome the store cannot know returns
 * KEEL_EUNCERTAIN: offering the same events again is safe. */
KEEL_API int keel_ingest_flush(struct keel_ingest *ing);
/* Flushes and ends the ingestion: KEEL_INGEST_BULK writes everything here
 * (on failure nothing was written); workers stop. Nothing may be added
 * after it. */
KEEL_API int keel_ingest_finish(struct keel_ingest *ing);
/* Events offered that the next keel_ingest_flush would commit (0 in
 * KEEL_INGEST_BULK mode, whose events wait for keel_ingest_finish). */
KEEL_API size_t keel_ingest_pending(const struct keel_ingest *ing);
/* The counts of what was committed (read: of what was offered). In
 * KEEL_INGEST_BULK mode accepted and duplicates stay 0 until finish has
 * written them; in KEEL_INGEST_WORKERS mode they are current after each
 * flush. */
KEEL_API const struct keel_report *keel_ingest_report(const struct keel_ingest *ing);
KEEL_API const char *keel_ingest_errmsg(const struct keel_ingest *ing);
/* How the events were written (one line; "" if nothing was written):
 * KEEL_INGEST_BULK names the store's bulk method, KEEL_INGEST_WORKERS the
 * workers. */
KEEL_API const char *keel_ingest_method(const struct keel_ingest *ing);
/* Frees the ingester; what is not committed (an open batch, a bulk load
 * never finished) is discarded. */
KEEL_API void keel_ingest_free(struct keel_ingest *ing);

/* For a consumer of a partitioned log (keel consume, docs/log.md): records,
 * in the same transaction as the next commit, that partition `partition`
 * of log `log` is applied up to sequence `seq` under fencing token
 * `token`. That commit holds every event offered before this call; a
 * batch that fails drops the positions given since the last commit. The
 * commit fails with KEEL_EFENCED (nothing of it written) when the store
 * holds a greater token for the partition: another process took it over.
 * A position never goes back: the store keeps the greater sequence.
 * KEEL_EINVAL outside KEEL_INGEST_STREAMING mode, or on a store that keeps
 * no log positions (those that take one writer at a time). */
KEEL_API int keel_ingest_log_position(struct keel_ingest *ing, const char *log,
				      uint32_t partition, uint64_t seq, uint64_t token);

/* --------------------------------------------------------------- input */

struct keel_reader;

/* Opens NDJSON input: a path (".gz" and ".zst" are decompressed) or "-"
 * for stdin (compression detected from magic bytes). */
KEEL_API int keel_reader_open(const char *path, size_t max_line, struct keel_reader **out,
			      char **errmsg);
/* Next line, without its newline: returns 1 and sets line, len and lineno;
 * 0 at end of input; KEEL_EIO on a read or decompression error (see
 * keel_reader_errmsg). A line longer than max_line is returned with
 * *too_long set, *line holding its first max_line bytes. */
KEEL_API int keel_reader_next(struct keel_reader *r, const char **line, size_t *len,
			      uint64_t *lineno, bool *too_long);
/* Compressed bytes consumed so far and the input's size (0 if unknown). */
KEEL_API void keel_reader_progress(const struct keel_reader *r, uint64_t *done,
				   uint64_t *total);
KEEL_API const char *keel_reader_errmsg(const struct keel_reader *r);
KEEL_API void keel_reader_close(struct keel_reader *r);

/* ------------------------------------------------------ reading the graph */

/* What every read takes: a valid time and a transaction time
 * (docs/semantics.md, "Transaction time"). Zero fields take the defaults:
 * at now, and everything the store has recorded. */
struct keel_read_options {
	size_t size;	   /* sizeof the struct (see "Options structs" above) */
	bool at_set;	   /* valid time: rows valid at `at` (default: now) */
	int64_t at;
	bool known_at_set; /* transaction time: the graph as it stood when */
	int64_t known_at;  /* the store's clock read known_at */
	/* keel_history: how the belief about each timeline changed and when
	 * each change was recorded, instead of its rows */
	bool changes;
	/* keel_history: only the rows valid at some moment of [from, to) (an
	 * end not set: open; a row emptied at a moment counts at it; with
	 * changes, the rows as created), and of each timeline only its
	 * latest `limit` rows (0: all; with changes, the latest recorded).
	 * The document then says "from", "to", "limit", and "omitted": what
	 * the limit left out. from not before to is KEEL_EINVAL. */
	bool from_set;
	int64_t from;
	bool to_set;
	int64_t to;
	size_t limit;
};

/* Each returns 0 and a malloc'd JSON document in *json (caller frees), or
 * KEEL_ENOTFOUND when the entity / value does not exist (for keel_show:
 * also at a time before the entity was first seen), KEEL_EFORGOTTEN when
 * the entity does not exist because keel_forget erased it (the message
 * says when and by whom), or another error
 * with keel_store_errmsg(s) set. A tenant with nothing stored (by
 * o->known_at) is KEEL_ENOTFOUND with the message "tenant "T" not found"
 * from each of them, as from keel_dump. o may be NULL (the defaults). */
KEEL_API int keel_show(struct keel_store *s, const char *tenant, const char *subject,
		       const struct keel_read_options *o, char **json);
KEEL_API int keel_history(struct keel_store *s, const char *tenant, const char *subject,
			  const char *predicate /* NULL: all */,
			  const struct keel_read_options *o, char **json);
KEEL_API int keel_why(struct keel_store *s, const char *tenant, const char *subject,
		      const char *predicate, const struct keel_read_options *o, char **json);
KEEL_API int keel_stats(struct keel_store *s, const char *tenant /* NULL: all */,
			const struct keel_read_options *o, char **json);

/* Finding things (docs/cli.md, "keel tenants", "keel entities", "keel
 * search"). A listing comes a page at a time, in bytewise subject order:
 * each document has "next", the cursor of the page after it (an opaque
 * string), or null on the last page. */
#define KEEL_DEFAULT_PAGE 100 /* keel_find_options.limit 0 */
#define KEEL_MAX_PAGE 1000
struct keel_find_options {
	size_t size;	    /* sizeof the struct (see "Options structs" above) */
	const char *kind;   /* keel_entities: only entities of this kind */
	const char *prefix; /* keel_entities: only subjects beginning with it */
	const char *cursor; /* the "next" of the page before; NULL: the first */
	size_t limit;	    /* entries a page: 0 = KEEL_DEFAULT_PAGE, at most
			       KEEL_MAX_PAGE */
};
/* The store's tenants, sorted bytewise, as {"tenants":[...]}: those for
 * which visible (if not NULL) returns true. As known at o->known_at, the
 * tenants with something recorded by then, and the document says
 * "known_at" first. A tenant has no valid time: o->at_set is KEEL_EINVAL.
 * o may be NULL. */
KEEL_API int keel_tenants(struct keel_store *s,
			  bool (*visible)(void *ud, const char *tenant), void *ud,
			  const struct keel_read_options *o, char **json);
/* keel_tenants a page at a time, as keel_entities pages (keel tenants,
 * GET /v1/tenants): f->limit of them (0: KEEL_DEFAULT_PAGE) after
 * f->cursor, as {"tenants":[...],"next":CURSOR|null} ("known_at" first as
 * above). f->kind and f->prefix are not taken (KEEL_EINVAL), nor a cursor
 * keel did not give or a limit above KEEL_MAX_PAGE. f and o may be NULL. */
KEEL_API int keel_tenants_page(struct keel_store *s,
			       bool (*visible)(void *ud, const char *tenant), void *ud,
			       const struct keel_find_options *f,
			       const struct keel_read_options *o, char **json);
/* A page of a tenant's entities that existed at o->at (first seen at or
 * before it; default now) as known at o->known_at: with f->kind, those
 * whose kind is that (docs/semantics.md, "Entities"); with f->prefix,
 * those whose subject begins with it. A tenant with none that match gives
 * an empty page; a tenant with nothing recorded (by o->known_at) is
 * KEEL_ENOTFOUND, "tenant "T" not found", as for every read. KEEL_EINVAL
 * for a cursor keel did not give or a limit above KEEL_MAX_PAGE. f and o
 * may be NULL (the defaults). */
KEEL_API int keel_entities(struct keel_store *s, const char *tenant,
			   const struct keel_find_options *f,
			   const struct keel_read_options *o, char **json);
/* A page of the subjects whose fact predicate has the value value at
 * o->at (default now), as known at o->known_at, each with the row that
 * holds it. value is JSON text (compared after removing the blanks
 * outside strings: numbers and escapes as written), or, when it does not
 * parse as JSON, a string: "active" and "\"active\"" both mean the
 * string. f->kind and f->prefix are not taken. An unknown tenant is
 * KEEL_ENOTFOUND, as for keel_entities. */
KEEL_API int keel_search(struct keel_store *s, const char *tenant, const char *predicate,
			 const char *value, const struct keel_find_options *f,
			 const struct keel_read_options *o, char **json);

/* The documents above, by the query that made them. */
enum keel_query_kind {
	KEEL_QUERY_SHOW,
	KEEL_QUERY_HISTORY,
	KEEL_QUERY_WHY,
	KEEL_QUERY_STATS,
	KEEL_QUERY_HISTORY_CHANGES, /* keel_history with changes set */
	KEEL_QUERY_TENANTS,
	KEEL_QUERY_ENTITIES,
	KEEL_QUERY_SEARCH,
};

/* Renders a document of keel_show, keel_history (either form), keel_why,
 * keel_stats or the finding reads (json[0..len), of the given kind) as aligned text for a person: labelled
 * lines and one table per list, every row of the document present, times
 * canonical, values as JSON text, null as "-" (docs/cli.md, "On a
 * terminal"). Returns 0 and a malloc'd NUL-terminated text in *text
 * (caller frees), or KEEL_EINVAL when json is not such a document. */
KEEL_API int keel_query_text(enum keel_query_kind kind, const char *json, size_t len,
		    char **text);
/* keel_query_text for a terminal `width` columns wide (0: no limit, as
 * keel_query_text): no line is wider, so none wraps. A table too wide
 * narrows its event references first, then values and names, then its
 * times (down to the second), and a cell or line cut ends in "…"
 * (U+2026); every row of the document is still a line (docs/cli.md,
 * "On a terminal"). Widths are terminal columns of UTF-8 text. */
KEEL_API int keel_query_text_fit(enum keel_query_kind kind, const char *json, size_t len,
				 size_t width, char **text);

/* Writes the canonical dump (docs/dump.md) of one tenant or all. A
 * tenant with nothing stored is KEEL_ENOTFOUND (nothing written), as for
 * keel_stats: a tenant exists only through its rows, and a mistyped name
 * must not pass for an empty backup. */
KEEL_API int keel_dump(struct keel_store *s, const char *tenant,
		       const struct keel_read_options *o /* NULL: now */, FILE *out);
/* Restores a dump into s (in batches, one transaction each). Bad records
 * fail with KEEL_EDUMP naming the line. */
KEEL_API int keel_load(struct keel_store *s, FILE *in);

/* --------------------------------------------------------------- replay */

/* keel replay (docs/replay.md): rebuilds one tenant's entities, facts and
 * relations from its event log with the given cartridge, in arrival order,
 * in one transaction, reading nothing but the log; the log is kept as it
 * is. The tenant is built in memory and written in bulk. */
struct keel_replay_options {
	size_t size; /* sizeof the struct (see "Options structs" above) */
	/* Borrowed. NULL: the tenant's recorded cartridge (compiled from the
	 * text the store keeps; a shared object must be given). Given, it
	 * must be the recorded one, unless the tenant has none (a store made
	 * by an older Keel) or change_cartridge is set: the replay then
	 * records it (docs/replay.md). A dry run may compare any. */
	const struct keel_cartridge *cartridge;
	bool dry_run;	      /* build and compare, write nothing */
	/* Logged events the cartridge now rejects: they stay in the log and
	 * add no rows. position is the event's arrival number in the tenant
	 * (1-based). Called from the replay's build thread, one at a time,
	 * in arrival order. May be NULL. */
	keel_reject_fn on_reject;
	void *reject_userdata;
	/* Rebuild with a cartridge other than the tenant's recorded one,
	 * which it then becomes. */
	bool change_cartridge;
};

/* Rows added and removed for one predicate, relation or the entities. */
struct keel_replay_change {
	const char *table; /* "entities", "facts" or "relations" */
	const char *name;  /* predicate or relation; "" for entities */
	uint64_t before, after; /* rows */
	uint64_t added, removed;
};

struct keel_replay_report {
	uint64_t events;    /* read from the log */
	uint64_t unhandled; /* type unknown to the cartridge */
	uint64_t rejected;  /* rejected by the cartridge now */
	uint64_t rows_before, rows_after; /* entities + facts + relations */
	uint64_t added, removed;	  /* over all changes */
	/* Every table / name present before or after, sorted by table then
	 * name bytewise; unchanged ones have added = removed = 0. */
	struct keel_replay_change *changes;
	size_t nchanges;
	char method[160]; /* how the rows were written (one line) */
	/* read: the log read (its events prepared beside it on a second
	 * thread); build: until the current rows are read too and the
	 * preparing has ended (both spans start at 0). */
	double read_seconds, build_seconds;
	double compare_seconds, write_seconds; /* after both, one by one */
};

/* Replays tenant into s. On success *out is a report to free with
 * keel_replay_report_free. On failure nothing of the tenant has changed
 * and keel_store_errmsg(s) says why. KEEL_ENOTFOUND: the tenant has no
 * events. KEEL_ECARTRIDGE: no cartridge was given and none is recorded
 * (or the recorded one is a shared object), or the given one is not the
 * recorded one and change_cartridge is not set. */
KEEL_API int keel_replay(struct keel_store *s, const char *tenant,
			 const struct keel_replay_options *o,
			 struct keel_replay_report **out);
KEEL_API void keel_replay_report_free(struct keel_replay_report *r);


/* --------------------------------------------------------------- forget */

/* keel forget (docs/semantics.md, "Forgetting"): erases a subject from a
 * tenant - its rows, the relations naming it, and its data in every logged
 * envelope that mentioned it - and leaves a tombstone saying what was
 * forgotten (the subject's SHA-256), when and by whom. The tenant is then
 * rebuilt from its redacted log as keel_replay would, so the graph after
 * is exactly a replay's. One transaction. */
struct keel_forget_options {
	size_t size; /* sizeof the struct (see "Options structs" above) */
	const struct keel_cartridge *cartridge; /* borrowed; NULL: the tenant's
						   recorded one */
	const char *by; /* required: who asked ("user:NAME", "token:NAME") */
};

struct keel_forget_report {
	uint64_t events; /* logged envelopes redacted */
	uint64_t rows;	 /* entities, facts and relations removed */
	int64_t forgotten_at;
	char subject_sha256[65]; /* lowercase hex, as the tombstone keeps it */
};

/* 0 and *out filled; KEEL_ENOTFOUND when nothing of the tenant names the
 * subject; KEEL_EFORGOTTEN when that is because it was forgotten before;
 * KEEL_ECARTRIDGE when the given cartridge is not the tenant's recorded
 * one, or none is given and the tenant has none recorded;
 * KEEL_EINVAL when an event names the subject only through fields other
 * subjects' operations need (nothing is changed then); another error with
 * keel_store_errmsg(s) set. On failure nothing has changed, except that a
 * store error after the commit (making the old bytes unreadable) is
 * reported as such with the subject already forgotten. */
KEEL_API int keel_forget(struct keel_store *s, const char *tenant, const char *subject,
			 const struct keel_forget_options *o,
			 struct keel_forget_report *out);

/* ---------------------------------------------------------------- export */

/* keel export (docs/export.md): snapshots for other tools. */
enum keel_export_format {
	KEEL_EXPORT_CSV,     /* entities/facts/relations/events.csv, RFC 4180 */
	KEEL_EXPORT_NDJSON,  /* one JSON object a line */
	KEEL_EXPORT_GRAPHML, /* one graph per tenant: entities as nodes, relations as edges */
};

struct keel_export_options {
	size_t size; /* sizeof the struct (see "Options structs" above) */
	enum keel_export_format format;
	const char *tenant; /* NULL: every tenant */
	bool at_set;	    /* rows valid at `at`, entities seen by then */
	int64_t at;
	/* Directory to write into (created if missing). NULL: write to out,
	 * which only ndjson, and graphml of one tenant, allow. */
	const char *dir;
	FILE *out;
	bool known_at_set; /* as recorded by known_at (docs/semantics.md) */
	int64_t known_at;
};

/* Writes the export; on failure keel_store_errmsg(s) says why (an
 * KEEL_EINVAL for options the format does not allow; KEEL_ENOTFOUND, with
 * nothing written, for a tenant with nothing stored, as keel_dump). */
KEEL_API int keel_export(struct keel_store *s, const struct keel_export_options *o);

/* -------------------------------------------------------------- generate */

struct keel_generate_options {
	size_t size; /* sizeof the struct (see "Options structs" above) */
	uint64_t events;   /* how many lines to write */
	uint32_t tenants;  /* default 1 */
	uint64_t seed;     /* default 1 */
	double late;       /* fraction delivered out of time order */
	double duplicates; /* fraction re-sent */
};

/* Writes a deterministic synthetic fleet stream as NDJSON (profile 1: its
 * output for given options never changes). */
KEEL_API int keel_generate_fleet(const struct keel_generate_options *o, FILE *out);

/* ------------------------------------------------------------------ log */

/* Keel's log (docs/log.md): NATS JetStream in front of the stores, for
 * Keel on many machines. A log S of P partitions is P JetStream streams,
 * "S-0" ... "S-<P-1>", stream S-p holding subject "S.p"; every event of a
 * tenant goes to partition keel_log_partition(tenant, P), in publish
 * order. Each stream's description records P. Leases on the partitions
 * live in the key-value bucket "S-leases". Built with KEEL_WITH_NATS;
 * without it, every function below but keel_log_partition fails with
 * KEEL_EINVAL. */
#define KEEL_LOG_MAX_PARTITIONS 1024
#define KEEL_LOG_DEFAULT_LEASE_MS 5000
#define KEEL_LOG_DEFAULT_DUPLICATE_WINDOW_MS 120000

/* The partition of a tenant: the FNV-1a 32-bit hash of its UTF-8 bytes
 * (offset basis 2166136261, prime 16777619), modulo partitions (> 0).
 * docs/log.md has test vectors, for producers that are not Keel. */
KEEL_API uint32_t keel_log_partition(const char *tenant, size_t len, uint32_t partitions);

/* Where a log is: its servers and its name, and how keel_log_create
 * makes it. Zero fields take the defaults shown. */
struct keel_log_options {
	size_t size;	     /* sizeof the struct (see "Options structs" above) */
	const char *servers; /* "nats://host:port[,host:port...]" (nats:// may
				be left off); required */
	const char *stream;  /* the log's name: letters, digits, '-', '_';
				required */
	/* keel_log_create only */
	uint32_t partitions; /* required: 1 to KEEL_LOG_MAX_PARTITIONS */
	unsigned replicas;   /* copies of each message: 1 (default), 3, 5 */
	uint32_t duplicate_window_ms; /* KEEL_LOG_DEFAULT_DUPLICATE_WINDOW_MS */
	uint32_t lease_ms;	      /* KEEL_LOG_DEFAULT_LEASE_MS */
	uint64_t max_age_ms;	      /* 0: messages are kept until removed */
	int64_t max_bytes;	      /* of each partition; 0: no limit */
	uint32_t connect_timeout_ms;  /* 0: 5000; how long to look for a server */
};

/* Makes the log S (its P streams, file storage, the duplicate window and
 * limits; the leases bucket), or checks that the existing one matches:
 * the same number of partitions and replicas. Streams made before are
 * left as they are. On success *report (if not NULL) is one line a
 * stream, what was made or found (free()); on failure *errmsg says why
 * (free()): KEEL_EIO the servers cannot be reached or JetStream refused,
 * KEEL_EINVAL the options or an existing log that does not match. */
KEEL_API int keel_log_create(const struct keel_log_options *o, char **report,
			     char **errmsg);

/* Publishing (keel publish, keel serve --forward): each envelope is
 * checked exactly as keel_ingest_add checks it (a bad one is rejected
 * through on_reject with the same message and never published), then
 * published asynchronously to its tenant's partition as a CloudEvent in
 * structured content mode (the compacted envelope as the payload), with
 * the header Nats-Msg-Id made of the event's identity (tenant "/" source
 * "/" id, each percent-encoded: docs/log.md), so a publish retried within
 * the duplicate window is stored once. */
struct keel_publish_report {
	uint64_t read;	     /* envelopes offered */
	uint64_t published;  /* stored by the log */
	uint64_t duplicates; /* the log had them already (its duplicate window) */
	uint64_t rejected;   /* not published */
	uint64_t retries;    /* publishes sent again after a timeout or error */
};

/* What became of a published event, once the log acknowledged it: stored,
 * or a duplicate (the log had its Nats-Msg-Id already). seq is the order
 * keel_publisher_add took the events that were not rejected, from 0 after
 * each keel_publisher_flush (a caller feeding several sources, whose
 * positions repeat, tells them apart by it, as with keel_outcome_fn). */
typedef void (*keel_published_fn)(void *userdata, uint64_t position, size_t seq,
				  bool duplicate);

struct keel_publish_options {
	size_t size; /* sizeof the struct (see "Options structs" above) */
	const struct keel_log_options *log; /* servers and stream (borrowed) */
	/* Borrowed. When set, it runs on each event as ingest would run it,
	 * and what it rejects is rejected here; NULL: the envelope rules
	 * only (a tenant's cartridge is its store's, which a publisher does
	 * not see). */
	const struct keel_cartridge *cartridge;
	size_t max_line;	  /* bytes; 0 = KEEL_DEFAULT_MAX_LINE */
	const char *position_word; /* "line" (default) or "index" */
	keel_reject_fn on_reject;  /* may be NULL; called on the caller's thread */
	void *reject_userdata;
	/* Called once per published event, from keel_publisher_flush on the
	 * caller's thread, in the order the acknowledgements came. */
	keel_published_fn on_published; /* may be NULL */
	void *published_userdata;
	unsigned max_pending;	/* publishes in flight; 0 = 4096 */
	uint32_t ack_timeout_ms; /* an acknowledgement's wait before the
				    publish is sent again; 0 = 5000 */
	/* How long a publish keeps being retried (timeouts, a partition
	 * without a leader, the servers unreachable) before the publisher
	 * fails; 0 = 60000. */
	uint32_t give_up_ms;
	FILE *log_file; /* "retrying ..." lines (borrowed); NULL: none */
};

struct keel_publisher;

/* Connects and reads the log's partitions (it must exist: keel_log_create).
 * On failure *out is NULL and *errmsg (free()) says why. */
KEEL_API int keel_publisher_new(const struct keel_publish_options *o,
				struct keel_publisher **out, char **errmsg);
/* Offers one envelope found at position (1-based line or 0-based index):
 * checked, then published without waiting for the acknowledgement (at
 * most max_pending in flight: the call waits when they are). Returns 0,
 * or KEEL_EIO once publishing has failed for good (give_up_ms passed
 * without an acknowledgement; keel_publisher_errmsg says why). */
KEEL_API int keel_publisher_add(struct keel_publisher *p, const char *text, size_t len,
				uint64_t position);
/* Rejects an input line longer than max_line (not buffered). */
KEEL_API int keel_publisher_add_too_long(struct keel_publisher *p, uint64_t position,
					 const char *head, size_t head_len);
/* Returns once every event offered is acknowledged by the log (published
 * or a duplicate), retrying what timed out; KEEL_EIO as for _add. */
KEEL_API int keel_publisher_flush(struct keel_publisher *p);
KEEL_API const struct keel_publish_report *keel_publisher_report(struct keel_publisher *p);
KEEL_API const char *keel_publisher_errmsg(const struct keel_publisher *p);
/* Frees it; events not yet acknowledged may or may not be in the log. */
KEEL_API void keel_publisher_free(struct keel_publisher *p);

/* Consuming (keel consume): the log's partitions projected into stores,
 * each partition owned by one living process at a time through a lease
 * in the bucket "S-leases", its events ingested through a
 * KEEL_INGEST_STREAMING handle with the partition's position
 * (keel_ingest_log_position) in each commit. */
struct keel_consume_options {
	size_t size; /* sizeof the struct (see "Options structs" above) */
	const struct keel_log_options *log; /* servers and stream (borrowed) */
	const char *store_url;	     /* the one store, or NULL with store_map */
	/* A store map file: partition ranges to store URLs (docs/log.md,
	 * "Store maps"). */
	const char *store_map;
	/* This process's name among the consumers: letters, digits, '-',
	 * '_', '.'; unique; NULL: "<host name>-<pid>". */
	const char *name;
	const struct keel_cartridge *cartridge; /* borrowed; NULL: each
						   tenant's recorded one */
	size_t batch;		     /* messages a fetch; 0 = KEEL_DEFAULT_BATCH */
	uint32_t commit_interval_ms; /* 0 = KEEL_DEFAULT_COMMIT_INTERVAL_MS */
	uint32_t ack_wait_ms;	     /* before the log delivers again; 0 = 30000 */
	size_t max_line;	     /* bytes; 0 = KEEL_DEFAULT_MAX_LINE */
	/* Called for rejected events: position is the message's sequence
	 * in its partition; the message starts "partition P seq N: ". */
	keel_reject_fn on_reject; /* may be NULL */
	void *reject_userdata;
	/* Returns true when the consumer should stop (checked at least
	 * every 100 ms): what was taken is committed, the leases given up. */
	bool (*should_stop)(void *userdata);
	void *stop_userdata;
	FILE *log_file; /* what happens: partitions taken and given up,
			   retries, refused commits (borrowed); NULL: none */
	/* When a fetch round brings nothing (the log is quiet), the open
	 * transaction is committed once its first message has waited this
	 * many milliseconds; 0: at once. */
	uint32_t linger_ms;
};

/* Runs a consumer until should_stop says so. A log or store that cannot
 * be reached is retried, never fatal, and said in log_file. Returns 0
 * once stopped, or an error for what retrying cannot mend (the log does
 * not exist, a bad store map, a store that keeps no log positions), with
 * *errmsg (free()). */
KEEL_API int keel_consume(const struct keel_consume_options *o, char **errmsg);

/* keel consume --status: a table a partition (owner, the stored
 * sequence, the stream's last sequence, lag), or with prometheus the same
 * in Prometheus text format, written to out. */
KEEL_API int keel_consume_status(const struct keel_consume_options *o, bool prometheus,
				 FILE *out, char **errmsg);

/* ------------------------------------------------------------ HTTP server */

struct keel_server;

#define KEEL_DEFAULT_MAX_BODY ((size_t)16 << 20)      /* 16 MiB */
#define KEEL_DEFAULT_MAX_BUFFERED ((size_t)256 << 20) /* 256 MiB */

/* keel serve (docs/http.md). Zero / NULL fields take the
 * defaults shown. */
struct keel_server_options {
	size_t size; /* sizeof the struct (see "Options structs" above) */
	const char *listen;	     /* "HOST:PORT", "[V6]:PORT"; "127.0.0.1:8080";
					port 0 picks a free port */
	const char *store_url;	     /* as keel_store_open */
	const char *cartridge;	     /* name or path; NULL: each tenant's
					recorded cartridge (an event of a
					tenant with none is rejected) */
	const char *token_file;	     /* NULL: no tokens, loopback only */
	unsigned threads;	     /* worker threads; 4 */
	size_t max_body;	     /* request body bytes; KEEL_DEFAULT_MAX_BODY */
	size_t max_line;	     /* bytes of one event; KEEL_DEFAULT_MAX_LINE */
	size_t max_buffered;	     /* bytes of bodies in memory, all requests
					together; KEEL_DEFAULT_MAX_BUFFERED
					(at least max_body) */
	unsigned max_connections;    /* 1000 */
	unsigned max_per_ip;	     /* connections from one address; 64 */
	unsigned idle_timeout;	     /* seconds without traffic; 30 */
	unsigned header_timeout;     /* seconds to send request headers; 10 */
	unsigned request_timeout;    /* seconds to send a whole request; 60 */
	unsigned grace;		     /* seconds keel_server_stop waits; 10 */
	FILE *log;		     /* server messages (borrowed); NULL: none */
	FILE *request_log;	     /* one JSON line per request (borrowed;
					docs/http.md, "Request log"); NULL:
					none */
	const char *tls_cert;	     /* PEM certificate (chain) file: HTTPS;
					NULL: plain HTTP. Both or neither */
	const char *tls_key;	     /* PEM private key file of tls_cert */
	bool insecure_http;	     /* let tokens travel in clear: plain HTTP
					with a token file off loopback */
	/* Which tenants get series of their own in GET /metrics (for a
	 * token for every tenant): "N", the first N tenants seen since the
	 * start (0: none); "all"; or a comma-separated list of tenant
	 * names. The others are summed in keel_other_tenants_events_total.
	 * NULL: KEEL_DEFAULT_METRICS_TENANTS (docs/http.md, "Metrics"). */
	const char *metrics_tenants;
	/* keel serve --forward (docs/log.md, "Publishing"): POST /v1/events
	 * publishes each event to the log forward_stream at these servers
	 * ("nats://host:port[,...]") and answers once the log has
	 * acknowledged every one: accepted (stored by the log) or duplicate
	 * (the log had it); nothing goes to the store, which serves the
	 * reads. A cartridge given runs on each event and rejects what it
	 * rejects; else the envelope rules alone judge. NULL: events are
	 * ingested into the store. */
	const char *forward;
	const char *forward_stream;
	/* keel serve --store-map FILE (docs/log.md, "Store maps"): each
	 * tenant is read from the store of its partition (partitions counted
	 * from the map: its ranges cover 0 to P-1), GET /v1/tenants from all
	 * of them. Serves reads only: POSTs need forward, and DELETE (keel
	 * forget) is refused. Excludes store_url. */
	const char *store_map;
};
#define KEEL_DEFAULT_METRICS_TENANTS "100"

/* The checks keel_server_start makes of o alone, before it reads a file
 * or opens a store or a socket: the listen address parses, tls_cert and
 * tls_key come together, and the server listens off loopback only with a
 * token file and, unless insecure_http, with TLS (docs/http.md,
 * "Authentication and tenants"). 0, or KEEL_EINVAL and *errmsg (if not
 * NULL) a message to free(). keel serve answers these as usage errors. */
KEEL_API int keel_server_check_options(const struct keel_server_options *o,
				       char **errmsg);

/* Opens the store, loads the cartridge and tokens, and starts serving on
 * worker threads; returns at once. On failure *out is NULL and *errmsg
 * (if not NULL) holds a message to free(). */
KEEL_API int keel_server_start(const struct keel_server_options *o,
			       struct keel_server **out, char **errmsg);
/* The port the server listens on (useful with port 0). */
KEEL_API uint16_t keel_server_port(const struct keel_server *srv);
/* Stops accepting connections, lets requests under way finish (at most
 * the grace period; a batch being written always finishes), closes
 * everything and frees srv. Accepts NULL. */
KEEL_API void keel_server_stop(struct keel_server *srv);

/* Bearer tokens: "keel_" and 64 hex digits of 256 random bits, and the
 * form the token file keeps, "sha256:" and 64 hex digits. */
#define KEEL_TOKEN_BUFSZ 80
/* A fresh random token and its hash; KEEL_EIO if the system has no
 * randomness to give. */
KEEL_API int keel_token_new(char token[KEEL_TOKEN_BUFSZ], char hash[KEEL_TOKEN_BUFSZ]);
/* The hash of token[0..len) as the token file keeps it. */
KEEL_API int keel_token_hash(const char *token, size_t len, char hash[KEEL_TOKEN_BUFSZ]);

#ifdef __cplusplus
}
#endif
#endif

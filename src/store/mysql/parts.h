/*
 * parts.h - what the files of the MySQL/MariaDB store share: the
 * store's state, the statement helpers and each file's entry points. Not
 * part of the library's API (internal.h is what tests see).
 *
 *   store.c      transactions and savepoints, seen ids, appending a
 *                batch, the ops table
 *   url.c        parsing mysql:// URLs
 *   sql.c        running statements, escaping, lists of values
 *   schema.c     the versioned schema, its migrations and the views
 *   connect.c    connecting, opening and closing the store
 *   bulk.c       MariaDB's bulk protocol (array binding)
 *   read.c       tenants, scans and counts
 *   find.c       the candidates of keel entities and keel search
 *   replay.c     replacing a tenant: LOAD DATA LOCAL INFILE
 *   forget.c     keel forget: redacted envelopes and tombstones
 *   cartridge.c  each tenant's recorded cartridge
 *   log.c        log positions and their fencing tokens (keel consume)
 */
#ifndef KEEL_STORE_MYSQL_STORE_H
#define KEEL_STORE_MYSQL_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include <mysql.h>

#include "store/store.h"
#include "internal.h"

#define KEEL_MYSQL_SCHEMA_VERSION 12
#define KEEL_MYSQL_INF "9223372036854775807"
#define KEEL_MYSQL_URL_FORM "mysql://user:password@host:port/db"

/* ssl-mode= (docs/store-mysql.md, "TLS"), MySQL's names and meanings. */
enum keel_mysql_ssl_mode {
	KEEL_MYSQL_SSL_PREFERRED, /* TLS if the server has it (the default) */
	KEEL_MYSQL_SSL_DISABLED,
	KEEL_MYSQL_SSL_REQUIRED,	/* TLS or no connection, certificate unchecked */
	KEEL_MYSQL_SSL_VERIFY_CA,	/* and signed by ssl-ca */
	KEEL_MYSQL_SSL_VERIFY_IDENTITY, /* and naming the host connected to */
};

struct keel_mysql_url {
	char *user;	/* NULL: the connector's default */
	char *password; /* NULL: none */
	char *host;	/* NULL: localhost */
	char *db;
	char *socket; /* NULL: TCP, or the default socket for localhost */
	unsigned port;
	unsigned connect_timeout;
	unsigned read_timeout;
	enum keel_mysql_ssl_mode ssl_mode;
	char *ssl_ca; /* CA certificate file (PEM); NULL: none */
	struct keel_buf shown; /* the URL with the password masked */
};

/* The statements of the bulk path, prepared once per connection. */
enum keel_mysql_bulk_kind {
	KEEL_MYSQL_BULK_EVENTS,
	KEEL_MYSQL_BULK_MENTIONS,
	KEEL_MYSQL_BULK_FACTS,
	KEEL_MYSQL_BULK_RELATIONS,
	KEEL_MYSQL_BULK_KINDS
};

#define KEEL_MYSQL_BULK_MAX_COLS 10

/* One parameter column of a bulk execution: strings as pointers and
 * lengths (NULL marked in ind), numbers in num. */
struct keel_mysql_col {
	const char **ptr;
	unsigned long *len;
	char *ind;
	int64_t *num;
};

struct keel_mysql_store {
	struct keel_store base;
	MYSQL *db;
	struct keel_mysql_url url;
	bool mariadb;
	unsigned long version;
	size_t packet;	      /* statements are cut at this many bytes */
	int64_t autoinc_step; /* auto_increment_increment */
	bool broken;	      /* connection lost: reconnect at the next begin */
	bool streaming;	      /* an unbuffered scan result is open */
	bool tx_open;	      /* START TRANSACTION sent */
	bool tx_writes;	      /* a batch has written in the open transaction */
	bool savepoint_sent;  /* SAVEPOINT sent for the open batch */
	unsigned last_errno;  /* of the last failed statement */
	/* The schema version found when the store opened, and the one it
	 * has now (keel migrate reports both). */
	int schema_was;
	struct keel_buf sql;
	struct keel_buf part;	 /* the current part's prefix (one tenant's list) */
	struct keel_ptrvec rows; /* scratch: the batch's distinct ids */
	struct keel_map ids;	 /* seen_ids: batch events by (tenant, id) */
	struct keel_mysql_stats stats;
	const char *bulk_file; /* the file LOAD DATA LOCAL may send (replay) */
	/* KEEL_MYSQL_PROFILE set: wall time per kind of statement ("what"),
	 * printed to stderr at close; a developer's tool, off by default
	 * (bench_mysql switches it on through internal.h, unprinted). */
	bool profile;
	bool profile_print;
	/* MariaDB's bulk protocol (array binding, one COM_STMT_BULK_EXECUTE
	 * per table per batch): see "The bulk path" in docs/store-mysql.md.
	 * Rows and mentions use it (they need no ids back), and events too,
	 * except a worker's whose seq is wanted back (keel_mysql_worker_init). */
	bool bulk;
	bool worker; /* keel_mysql_worker_init: one writer of several */
	MYSQL_STMT *stmts[KEEL_MYSQL_BULK_KINDS];
	struct keel_mysql_col *cols; /* column-wise parameter arrays */
	size_t cols_cap;	     /* rows each column array holds */
	struct keel_mysql_prof prof[KEEL_MYSQL_PROF_KINDS];
};

/* Called for each row of a statement's result. */
typedef int (*keel_mysql_rows_fn)(struct keel_mysql_store *m, void *ud, MYSQL_ROW row,
				  const unsigned long *len, unsigned ncols);

/*
 * A statement built from many items, cut where it would pass the packet
 * limit:
 *
 *   head open item sep item ... close join open item ... close tail
 *
 * A part (open ... close) holds at most part_max items; parts are joined by
 * `join`. For row-constructor lookups a part is "SELECT ... IN (" ... ")"
 * and parts are joined by UNION ALL; for INSERTs there is one part.
 */
struct keel_mysql_list {
	struct keel_mysql_store *m;
	const char *what;
	const char *head, *open, *sep, *close, *join, *tail;
	size_t part_max;
	bool in_list;	   /* parts are row-constructor IN lists (stats) */
	size_t items;	   /* in the current statement */
	size_t part_items; /* in the current part */
	bool new_part;	   /* the next item starts a part (open changed) */
	size_t done;	   /* items of earlier statements */
	int (*run)(struct keel_mysql_list *l);
	void *ud;
};

static inline struct keel_mysql_store *keel_mysql_downcast(struct keel_store *s)
{
	if (s->ops != &keel_store_mysql_ops)
		abort();
	return (struct keel_mysql_store *)s;
}

static inline const struct keel_mysql_store *
keel_mysql_cdowncast(const struct keel_store *s)
{
	if (s->ops != &keel_store_mysql_ops)
		abort();
	return (const struct keel_mysql_store *)s;
}

/* Statements (sql.c) */
bool keel_mysql_lost(unsigned e);
int keel_mysql_error(struct keel_mysql_store *m, const char *what, unsigned e,
		     const char *text);
int keel_mysql_fail(struct keel_mysql_store *m, const char *what);
double keel_mysql_now(void);
void keel_mysql_set_max_envelope(struct keel_mysql_store *m);
void keel_mysql_prof_add(struct keel_mysql_store *m, const char *what, double t0);
void keel_mysql_prof_print(const struct keel_mysql_store *m);
int keel_mysql_run(struct keel_mysql_store *m, const char *sql, size_t len,
		   const char *what);
int keel_mysql_runs(struct keel_mysql_store *m, const char *sql, const char *what);
int keel_mysql_select(struct keel_mysql_store *m, const char *what, keel_mysql_rows_fn fn,
		      void *ud);
void keel_mysql_add_str(struct keel_mysql_store *m, struct keel_buf *b,
			struct keel_str s);
size_t keel_mysql_str_size(struct keel_str s);
int64_t keel_mysql_i64(const char *p, unsigned long n);
uint64_t keel_mysql_u64(const char *p, unsigned long n);
struct keel_str keel_mysql_col(MYSQL_ROW row, const unsigned long *len, unsigned i);
int keel_mysql_list_flush(struct keel_mysql_list *l);
int keel_mysql_list_item(struct keel_mysql_list *l, size_t size);
void keel_mysql_list_part(struct keel_mysql_list *l, const char *open);
int keel_mysql_run_list(struct keel_mysql_list *l);

/* URLs (url.c) */
void keel_mysql_url_free(struct keel_mysql_url *u);
int keel_mysql_url_parse(const char *url, struct keel_mysql_url *u, struct keel_buf *err);
const char *keel_mysql_ssl_mode_name(enum keel_mysql_ssl_mode m);

/* The schema (schema.c) */
int keel_mysql_schema(struct keel_mysql_store *m, struct keel_buf *err);
int keel_mysql_schema_versions(struct keel_store *s, int *was, int *now);

/* Connecting (connect.c) */
int keel_mysql_connect(struct keel_mysql_store *m, struct keel_buf *err);
int keel_mysql_open(const char *url, bool existing, struct keel_store **out,
		    struct keel_buf *err);
void keel_mysql_close(struct keel_store *s);

/* Batches (store.c) */
int keel_mysql_tx(struct keel_mysql_store *m);
/* A new connection after the old one was lost (m->broken): only between
 * transactions, since the server rolled the open one back. */
int keel_mysql_reconnect(struct keel_mysql_store *m);
int keel_mysql_write_events(struct keel_mysql_store *m, struct keel_batch_event **ev,
			    size_t n, bool seqs_wanted);
int keel_mysql_write_append(struct keel_mysql_store *m, const struct keel_append *a);
int keel_mysql_worker_init(struct keel_store *s);

/* Recorded cartridges (cartridge.c) */
int keel_mysql_cartridge_get(struct keel_store *s, struct keel_str tenant,
			     struct keel_cartridge_record *out, struct keel_arena *hold);
int keel_mysql_cartridge_put(struct keel_store *s, const struct keel_str *tenants, size_t n,
			const struct keel_cartridge_record *r, bool replace);

/* Log positions (log.c) */
int keel_mysql_log_position(struct keel_store *s, const struct keel_log_position *p,
			    uint64_t *stored);
int keel_mysql_log_positions(struct keel_store *s, struct keel_str log,
			     keel_log_position_fn fn, void *ud);

/* The bulk path (bulk.c) */
void keel_mysql_bulk_close_stmts(struct keel_mysql_store *m);
int keel_mysql_bulk_prepare(struct keel_mysql_store *m);
int keel_mysql_bulk_events(struct keel_mysql_store *m, struct keel_batch_event **ev,
			   size_t n);
int keel_mysql_bulk_mentions(struct keel_mysql_store *m, const struct keel_mention *v,
			     size_t n);
int keel_mysql_bulk_rows(struct keel_mysql_store *m, const struct keel_assertion *v,
			 size_t n, enum keel_row_kind kind);

/* Reading (read.c) */
int keel_mysql_tenants(struct keel_store *s, struct keel_ptrvec *out);
int keel_mysql_scan(struct keel_store *s, const struct keel_scan *q, keel_scan_fn fn,
		    void *ud);
int keel_mysql_counts(struct keel_store *s, struct keel_str tenant, int64_t known_at,
		      uint64_t out[4]);

/* Finding (find.c) */
int keel_mysql_entity_subjects(struct keel_store *s, const struct keel_candidates *q,
			       struct keel_ptrvec *out);
int keel_mysql_fact_subjects(struct keel_store *s, const struct keel_candidates *q,
			     struct keel_ptrvec *out);

/* Replay (replay.c) */
void keel_mysql_infile_setup(struct keel_mysql_store *m);
/* Forgetting (forget.c): the ops forget and tombstone. */
int keel_mysql_scan_run(struct keel_mysql_store *m, const struct keel_scan *q,
			keel_scan_fn fn, void *ud);
int keel_mysql_forget_find(struct keel_store *s, struct keel_str tenant,
			   const struct keel_forget_find *f, keel_scan_fn fn, void *ud);
int keel_mysql_forget_rows(struct keel_store *s, struct keel_str tenant,
			   struct keel_str subject, struct keel_str quoted,
			   const struct keel_mention_fix *fix, size_t n, uint64_t *removed);
int keel_mysql_forget(struct keel_store *s, struct keel_str tenant,
		      const struct keel_redaction *r, size_t n,
		      const struct keel_tombstone *t);
int keel_mysql_tombstone(struct keel_store *s, struct keel_str tenant,
			 const char *subject_hash, struct keel_tombstone *out,
			 struct keel_buf *buf);
int keel_mysql_replace_tenant(struct keel_store *s, struct keel_str tenant,
			      const struct keel_replace_scope *scope,
			      const struct keel_append *a, uint64_t log_events,
			      struct keel_buf *note);

#endif

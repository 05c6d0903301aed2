/*
 * checkpoint.c - the SQLite store's background work: PASSIVE WAL
 * checkpoints on a thread and connection of their own; and the store's
 * counters for GET /metrics (theirs, and the durable commits' syncs).
 *
 * In WAL mode a commit that finds the log past wal_autocheckpoint pages
 * copies the log back into the database and syncs it, inside the commit:
 * that one batch waits for a checkpoint of megabytes, and on the server
 * every request queued behind the writer waits with it (its p99). So a
 * store handle that writes to a file checkpoints on its own thread, often
 * and small (PASSIVE: it never waits for, nor blocks, the writer or
 * readers), and the log never grows to the size at which a commit would
 * do it. A long ingest gains too: its commits no longer stop to
 * checkpoint. docs/store-sqlite.md has the measurements, including why
 * every 10 ms.
 *
 * The checkpointer starts with the handle's first transaction (a handle
 * that only reads, like the server's read handles, never starts one) and
 * stops when the handle closes. An in-memory database (sqlite::memory:)
 * has no log to copy and gets none.
 */
#include "parts.h"

#include <time.h>

/* Busy: a checkpoint every this many milliseconds, so each is small (its
 * fsync is what the writer's next commit may wait behind). Idle: the wait
 * doubles up to IDLE_FACTOR times that, so a quiet store stays quiet. */
#define KEEL_SQLITE_CHECKPOINT_MS 10u
#define IDLE_FACTOR 16u

/* One PASSIVE checkpoint; true if it copied frames. */
static bool keel_sqlite_checkpoint_once(struct keel_sqlite_checkpointer *c)
{
	int nlog = 0, nckpt = 0;
	/* A connection finds the log only once it has read the database;
	 * until then a checkpoint reports "not in WAL mode". */
	if (!c->attached)
		c->attached = sqlite3_exec(c->db, "SELECT count(*) FROM sqlite_master", NULL,
					   NULL, NULL) == SQLITE_OK;
	/* SQLITE_BUSY (another checkpoint under way) is fine: the next round
	 * catches up. */
	if (sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &nlog, &nckpt) !=
		SQLITE_OK ||
	    nckpt <= 0)
		return false;
	/* nckpt counts the log's frames copied so far, since the writer last
	 * restarted the log from its beginning. */
	int fresh = nckpt >= c->last_ckpt ? nckpt - c->last_ckpt : nckpt;
	c->last_ckpt = nckpt;
	if (fresh <= 0)
		return false;
	atomic_fetch_add(&c->runs, 1);
	atomic_fetch_add(&c->frames, (uint64_t)fresh);
	return true;
}

static void *keel_sqlite_checkpoint_main(void *arg)
{
	struct keel_sqlite_checkpointer *c = arg;
	unsigned wait_ms = KEEL_SQLITE_CHECKPOINT_MS;
	pthread_mutex_lock(&c->lock);
	while (!c->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)wait_ms * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&c->cond, &c->lock, &ts);
		if (c->stop)
			break;
		pthread_mutex_unlock(&c->lock);
		bool copied = keel_sqlite_checkpoint_once(c);
		if (copied)
			wait_ms = KEEL_SQLITE_CHECKPOINT_MS;
		else if (wait_ms < KEEL_SQLITE_CHECKPOINT_MS * IDLE_FACTOR)
			wait_ms *= 2;
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

void keel_sqlite_checkpoint_init(struct keel_sqlite_store *s)
{
	atomic_init(&s->ckpt.runs, 0);
	atomic_init(&s->ckpt.frames, 0);
	/* The file's absolute name: "" for an in-memory database. */
	const char *file = sqlite3_db_filename(s->db, "main");
	s->ckpt.file = file && *file ? keel_xstrdup(file) : NULL;
}

int keel_sqlite_checkpoint_start(struct keel_sqlite_store *s)
{
	struct keel_sqlite_checkpointer *c = &s->ckpt;
	if (c->running || !c->file)
		return 0;
	/* Never creates the file: this handle has it open already. */
	if (sqlite3_open_v2(c->file, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		int rc = keel_store_fail(&s->base, KEEL_ESTORE, "sqlite \"%s\": checkpointer: %s",
					 s->path, c->db ? sqlite3_errmsg(c->db) : "out of memory");
		sqlite3_close(c->db);
		c->db = NULL;
		return rc;
	}
	c->stop = false;
	c->attached = false;
	c->last_ckpt = 0;
	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &a);
	pthread_condattr_destroy(&a);
	if (pthread_create(&c->thread, NULL, keel_sqlite_checkpoint_main, c) != 0) {
		sqlite3_close(c->db);
		c->db = NULL;
		pthread_mutex_destroy(&c->lock);
		pthread_cond_destroy(&c->cond);
		return keel_store_fail(&s->base, KEEL_EIO,
				       "sqlite \"%s\": cannot start the checkpointer thread",
				       s->path);
	}
	c->running = true;
	return 0;
}

void keel_sqlite_checkpoint_stop(struct keel_sqlite_store *s)
{
	struct keel_sqlite_checkpointer *c = &s->ckpt;
	free(c->file);
	c->file = NULL;
	if (!c->running)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	sqlite3_close(c->db);
	c->db = NULL;
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	c->running = false;
}

void keel_sqlite_metrics(struct keel_store *bs, struct keel_buf *out)
{
	struct keel_sqlite_store *s = keel_sqlite_downcast(bs);
	if (!s->ckpt.file)
		return;
	keel_buf_addf(out,
		      "# HELP keel_sqlite_checkpoints_total Background WAL checkpoints "
		      "that copied pages.\n"
		      "# TYPE keel_sqlite_checkpoints_total counter\n"
		      "keel_sqlite_checkpoints_total %llu\n"
		      "# HELP keel_sqlite_checkpoint_pages_total WAL pages copied back "
		      "by background checkpoints.\n"
		      "# TYPE keel_sqlite_checkpoint_pages_total counter\n"
		      "keel_sqlite_checkpoint_pages_total %llu\n"
		      "# HELP keel_sqlite_commit_syncs_total Syncs of the WAL right "
		      "after a commit, before it is answered (keel serve's writer).\n"
		      "# TYPE keel_sqlite_commit_syncs_total counter\n"
		      "keel_sqlite_commit_syncs_total %llu\n",
		      (unsigned long long)atomic_load(&s->ckpt.runs),
		      (unsigned long long)atomic_load(&s->ckpt.frames),
		      (unsigned long long)atomic_load(&s->commit_syncs));
}

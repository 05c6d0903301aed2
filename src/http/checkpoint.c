/*
 * checkpoint.c - a background WAL checkpointer for the server on SQLite.
 *
 * In WAL mode a commit that finds the log past wal_autocheckpoint pages
 * copies the log back into the database and syncs it, inside the commit:
 * that one request waits for a checkpoint of megabytes, and every request
 * queued behind the writer waits with it. A server answering single-event
 * POSTs sees this as its p99. So the server checkpoints on its own thread
 * and connection, often and small (PASSIVE: it never waits for, nor
 * blocks, the writer or readers), and the log never grows to the size at
 * which a commit would do it.
 *
 * It talks to the database file directly, beside the store: the store's
 * own connections are behind the keel_store interface.
 *
 * keel ingest uses it too (keel_checkpointer_open, keel.h): there the
 * commits of a long ingest no longer stop to checkpoint
 * (docs/performance.md has the measurements).
 */
#include "http.h"

#include "keel.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* An idle checkpointer waits at most this many intervals. */
#define IDLE_FACTOR 16u

struct keel_checkpointer {
	sqlite3 *db;
	unsigned interval_ms;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	bool attached;
	int last_ckpt;
	atomic_uint_fast64_t runs;
	atomic_uint_fast64_t frames;
};

static void *checkpoint_main(void *arg)
{
	struct keel_checkpointer *c = arg;
	/* Busy: every interval_ms, so each checkpoint is small (its fsync is
	 * what the writer's next commit may wait behind). Idle: the wait
	 * doubles up to IDLE_FACTOR times that, so a quiet server stays
	 * quiet. */
	unsigned wait_ms = c->interval_ms;
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
		int nlog = 0, nckpt = 0;
		bool copied = false;
		/* A connection finds the log only once it has read the
		 * database; until then a checkpoint reports "not in WAL mode". */
		if (!c->attached)
			c->attached = sqlite3_exec(c->db, "SELECT count(*) FROM sqlite_master",
						   NULL, NULL, NULL) == SQLITE_OK;
		/* SQLITE_BUSY (another checkpoint under way) is fine: the next
		 * round catches up. */
		if (sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &nlog,
					      &nckpt) == SQLITE_OK &&
		    nckpt > 0) {
			/* nckpt counts the log's frames copied so far, since the
			 * writer last restarted the log from its beginning. */
			int fresh = nckpt >= c->last_ckpt ? nckpt - c->last_ckpt : nckpt;
			if (fresh > 0) {
				atomic_fetch_add(&c->runs, 1);
				atomic_fetch_add(&c->frames, (uint64_t)fresh);
				copied = true;
			}
			c->last_ckpt = nckpt;
		}
		if (copied)
			wait_ms = c->interval_ms;
		else if (wait_ms < c->interval_ms * IDLE_FACTOR)
			wait_ms *= 2;
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int keel_checkpointer_start(const char *path, unsigned interval_ms,
			    struct keel_checkpointer **out, struct keel_buf *err)
{
	*out = NULL;
	struct keel_checkpointer *c = keel_xcalloc(1, sizeof *c);
	c->interval_ms = interval_ms;
	atomic_init(&c->runs, 0);
	atomic_init(&c->frames, 0);
	/* Never creates the file: the store has opened it already. */
	if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		keel_buf_addf(err, "sqlite \"%s\": checkpointer: %s", path,
			      c->db ? sqlite3_errmsg(c->db) : "out of memory");
		sqlite3_close(c->db);
		free(c);
		return KEEL_ESTORE;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &a);
	pthread_condattr_destroy(&a);
	if (pthread_create(&c->thread, NULL, checkpoint_main, c) != 0) {
		keel_buf_adds(err, "cannot start the checkpointer thread");
		sqlite3_close(c->db);
		pthread_mutex_destroy(&c->lock);
		pthread_cond_destroy(&c->cond);
		free(c);
		return KEEL_EIO;
	}
	*out = c;
	return 0;
}

int keel_checkpointer_open(const char *store_url, unsigned interval_ms,
			   struct keel_checkpointer **out, char **errmsg)
{
	*out = NULL;
	if (errmsg)
		*errmsg = NULL;
	/* The store's default, as keel_store_open resolves it. */
	if (!store_url || !*store_url) {
		store_url = getenv("KEEL_STORE");
		if (!store_url || !*store_url)
			store_url = "sqlite:keel.db";
	}
	if (strncmp(store_url, "sqlite:", 7) != 0 ||
	    strcmp(store_url, "sqlite::memory:") == 0)
		return 0;
	struct keel_buf err;
	keel_buf_init(&err);
	int rc = keel_checkpointer_start(store_url + 7, interval_ms, out, &err);
	if (rc && errmsg)
		*errmsg = keel_xstrdup(err.len ? err.data : keel_strerror(rc));
	keel_buf_free(&err);
	return rc;
}

void keel_checkpointer_stop(struct keel_checkpointer *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	sqlite3_close(c->db);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(c);
}

void keel_checkpointer_stats(struct keel_checkpointer *c, uint64_t *runs, uint64_t *frames)
{
	*runs = c ? atomic_load(&c->runs) : 0;
	*frames = c ? atomic_load(&c->frames) : 0;
}

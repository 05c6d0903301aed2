/*
 * test_ingest.c - the ingester's per-event outcomes (on_outcome in
 * struct keel_ingest_options): what each event of a committed batch
 * became, in the order it was added, with its position and its place in
 * the batch; nothing for rejected events, nothing for a batch that failed.
 * And how commits group batches (docs/semantics.md, "Batches, commits and
 * failures"): nothing is counted or told before the commit that holds it,
 * not even by a process killed with SIGKILL; a failed batch is rolled back
 * alone.
 */
#include "support.h"

#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"

/* A fleet event of tenant acme. */
static char *event(const char *id, const char *type, const char *vehicle,
		   const char *status, int minute)
{
	char *buf = malloc(1024);
	snprintf(buf, 1024,
		 "{\"specversion\":\"1.0\",\"id\":\"%s\",\"tenant\":\"acme\","
		 "\"type\":\"fleet.%s\",\"source\":\"test\","
		 "\"time\":\"2024-05-01T10:%02d:00Z\","
		 "\"data\":{\"vehicle_id\":\"%s\",\"status\":\"%s\",\"reason\":null}}",
		 id, type, minute, vehicle, status);
	return buf;
}

struct seen {
	uint64_t position[32];
	size_t seq[32];
	enum keel_ingest_outcome outcome[32];
	size_t n;
	uint64_t rejected[32];
	size_t nrejected;
};

static void on_outcome(void *ud, uint64_t position, size_t seq,
		       enum keel_ingest_outcome o)
{
	struct seen *s = ud;
	assert_true(s->n < 32);
	s->position[s->n] = position;
	s->seq[s->n] = seq;
	s->outcome[s->n] = o;
	s->n++;
}

static void on_reject(void *ud, uint64_t position, const char *id, const char *message,
		      const char *input, size_t input_len)
{
	(void)id;
	(void)message;
	(void)input;
	(void)input_len;
	struct seen *s = ud;
	s->rejected[s->nrejected++] = position;
}

static struct keel_ingest *ingester_every(struct keel_store *st, struct keel_cartridge **c,
					  struct seen *seen, size_t batch,
					  uint32_t commit_interval_ms)
{
	char *err = NULL;
	assert_int_equal(keel_cartridge_load("fleet", c, &err), 0);
	struct keel_ingest_options o = {
		.size = sizeof o,
		.cartridge = *c,
		.batch = batch,
		.position_word = "index",
		.on_reject = on_reject,
		.reject_userdata = seen,
		.on_outcome = on_outcome,
		.outcome_userdata = seen,
		.commit_interval_ms = commit_interval_ms,
	};
	struct keel_ingest *ing = NULL;
	assert_int_equal(keel_ingest_new(st, &o, &ing), 0);
	return ing;
}

/* With the default commit interval. */
static struct keel_ingest *ingester(struct keel_store *st, struct keel_cartridge **c,
				    struct seen *seen, size_t batch)
{
	return ingester_every(st, c, seen, batch, 0);
}

/* One batch holding every outcome: the answer of each event matches the
 * report's counts, comes after the commit (flush), in add order, and a
 * rejected event has none (it went to on_reject). Positions repeat on
 * purpose (two sources in one batch): seq tells the events apart. */
static void outcomes_of_a_batch(void **state)
{
	(void)state;
	struct keel_store *st = NULL;
	assert_int_equal(keel_store_open("memory:", &st, NULL), 0);
	struct keel_cartridge *c = NULL;
	struct seen seen = {0};
	/* A first batch logs e-1 and e-2. */
	struct keel_ingest *ing = ingester(st, &c, &seen, 100);
	char *e1 = event("e-1", "vehicle.status_changed", "V-1", "parked", 1);
	char *e2 = event("e-2", "vehicle.status_changed", "V-1", "moving", 2);
	assert_int_equal(keel_ingest_add(ing, e1, strlen(e1), 0), 0);
	assert_int_equal(keel_ingest_add(ing, e2, strlen(e2), 1), 0);
	assert_int_equal(keel_ingest_flush(ing), 0);
	assert_int_equal(seen.n, 2);
	assert_int_equal(seen.outcome[0], KEEL_INGEST_ACCEPTED);
	assert_int_equal(seen.outcome[1], KEEL_INGEST_ACCEPTED);
	memset(&seen, 0, sizeof seen);

	/* The second: e-1 again (duplicate), e-2 changed (conflicting), a
	 * new one, an unhandled type, a bad one, the new one again (a repeat
	 * inside the batch). */
	char *e2x = event("e-2", "vehicle.status_changed", "V-1", "broken", 2);
	char *e3 = event("e-3", "vehicle.status_changed", "V-2", "parked", 3);
	char *e4 = event("e-4", "vehicle.teleported", "V-2", "parked", 4);
	char *bad = event("e-5", "vehicle.status_changed", "V-2", "parked", 99);
	const char *text[] = {e1, e2x, e3, e4, bad, e3};
	const uint64_t pos[] = {0, 1, 0, 1, 2, 3};
	for (size_t i = 0; i < 6; i++) {
		size_t len = strlen(text[i]);
		assert_int_equal(keel_ingest_add(ing, text[i], len, pos[i]), 0);
	}
	/* Nothing before the commit. */
	assert_int_equal(seen.n, 0);
	assert_int_equal(seen.nrejected, 1);
	assert_int_equal(seen.rejected[0], 2);
	assert_int_equal(keel_ingest_flush(ing), 0);
	assert_int_equal(seen.n, 5);
	const enum keel_ingest_outcome want[] = {
		KEEL_INGEST_DUPLICATE, KEEL_INGEST_CONFLICTING, KEEL_INGEST_ACCEPTED,
		KEEL_INGEST_UNHANDLED, KEEL_INGEST_DUPLICATE};
	const uint64_t want_pos[] = {0, 1, 0, 1, 3};
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(seen.seq[i], i);
		assert_int_equal(seen.position[i], want_pos[i]);
		assert_int_equal(seen.outcome[i], want[i]);
	}
	/* The report counts the same. */
	const struct keel_report *r = keel_ingest_report(ing);
	assert_int_equal(r->accepted, 2 + 2);
	assert_int_equal(r->unhandled, 1);
	assert_int_equal(r->duplicates, 3);
	assert_int_equal(r->conflicting, 1);
	assert_int_equal(r->rejected, 1);

	/* Committing every batch, a full batch is committed by
	 * keel_ingest_add: the outcomes come then, seq restarting at 0 with
	 * the next batch. */
	keel_ingest_free(ing);
	keel_cartridge_free(c);
	memset(&seen, 0, sizeof seen);
	ing = ingester_every(st, &c, &seen, 2, KEEL_COMMIT_EVERY_BATCH);
	char *e6 = event("e-6", "vehicle.status_changed", "V-3", "parked", 6);
	char *e7 = event("e-7", "vehicle.status_changed", "V-3", "moving", 7);
	char *e8 = event("e-8", "vehicle.status_changed", "V-3", "parked", 8);
	assert_int_equal(keel_ingest_add(ing, e6, strlen(e6), 10), 0);
	assert_int_equal(seen.n, 0);
	assert_int_equal(keel_ingest_add(ing, e7, strlen(e7), 11), 0);
	assert_int_equal(seen.n, 2);
	assert_int_equal(keel_ingest_add(ing, e8, strlen(e8), 12), 0);
	assert_int_equal(keel_ingest_flush(ing), 0);
	assert_int_equal(seen.n, 3);
	assert_int_equal(seen.seq[2], 0);
	assert_int_equal(seen.position[2], 12);
	assert_int_equal(seen.outcome[2], KEEL_INGEST_ACCEPTED);

	/* With batches grouped into commits (an interval no test reaches),
	 * full batches are written but nothing is told or counted until the
	 * commit: then every batch of it, seq counting from its first. */
	keel_ingest_free(ing);
	keel_cartridge_free(c);
	memset(&seen, 0, sizeof seen);
	ing = ingester_every(st, &c, &seen, 2, 3600 * 1000);
	char *e9 = event("e-9", "vehicle.status_changed", "V-4", "parked", 9);
	char *e10 = event("e-10", "vehicle.status_changed", "V-4", "moving", 10);
	char *e11 = event("e-11", "vehicle.status_changed", "V-4", "parked", 11);
	assert_int_equal(keel_ingest_add(ing, e9, strlen(e9), 20), 0);
	assert_int_equal(keel_ingest_add(ing, e10, strlen(e10), 21), 0);
	assert_int_equal(keel_ingest_add(ing, e11, strlen(e11), 22), 0);
	assert_int_equal(seen.n, 0);
	assert_int_equal(keel_ingest_report(ing)->accepted, 0);
	assert_int_equal(keel_ingest_report(ing)->batches, 0);
	assert_int_equal(keel_ingest_pending(ing), 3);
	assert_int_equal(keel_ingest_flush(ing), 0);
	assert_int_equal(seen.n, 3);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(seen.seq[i], i);
		assert_int_equal(seen.position[i], 20 + i);
		assert_int_equal(seen.outcome[i], KEEL_INGEST_ACCEPTED);
	}
	assert_int_equal(keel_ingest_report(ing)->accepted, 3);
	assert_int_equal(keel_ingest_report(ing)->batches, 2);
	assert_int_equal(keel_ingest_report(ing)->commits, 1);
	assert_int_equal(keel_ingest_pending(ing), 0);

	keel_ingest_free(ing);
	keel_cartridge_free(c);
	keel_store_close(st);
	free(e1), free(e2), free(e2x), free(e3), free(e4), free(bad);
	free(e6), free(e7), free(e8), free(e9), free(e10), free(e11);
}

/* A batch whose commit fails reports no outcome (nothing of it was
 * written); sent again it does. Another connection holds SQLite's write
 * lock past the busy timeout. */
static void no_outcomes_for_a_failed_batch(void **state)
{
	(void)state;
	char *dir = keel_test_tmpdir();
	char url[512];
	snprintf(url, sizeof url, "sqlite:%s/keel.db", dir);
	struct keel_store *st = NULL;
	assert_int_equal(keel_store_open(url, &st, NULL), 0);
	struct keel_cartridge *c = NULL;
	struct seen seen = {0};
	struct keel_ingest *ing = ingester(st, &c, &seen, 100);
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(url + 7, &db), SQLITE_OK);
	int rc = sqlite3_exec(db, "BEGIN EXCLUSIVE", NULL, NULL, NULL);
	assert_int_equal(rc, SQLITE_OK);
	char *e1 = event("e-1", "vehicle.status_changed", "V-1", "parked", 1);
	assert_int_equal(keel_ingest_add(ing, e1, strlen(e1), 0), 0);
	assert_int_not_equal(keel_ingest_flush(ing), 0);
	assert_int_equal(seen.n, 0);
	assert_int_equal(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(keel_ingest_add(ing, e1, strlen(e1), 0), 0);
	assert_int_equal(keel_ingest_flush(ing), 0);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.outcome[0], KEEL_INGEST_ACCEPTED);
	keel_ingest_free(ing);
	keel_cartridge_free(c);
	keel_store_close(st);
	free(e1);
	keel_test_rmdir(dir);
	free(dir);
}

struct hashes {
	uint64_t hash[8];
	size_t n;
};

static int collect_hash(void *ud, const struct keel_record *r)
{
	struct hashes *h = ud;
	assert_true(h->n < 8);
	/* the hash of the envelope as logged, seed 0 (batch.h) */
	assert_int_equal(r->hash, keel_hash64(r->envelope.ptr, r->envelope.len, 0));
	h->hash[h->n++] = r->hash;
	return 0;
}

/* The memory store hashes envelopes on demand (hashes_on_demand): its
 * ingester leaves events unhashed, yet a scan reports the same hashes as
 * SQLite's, which has them from every event, and a repeated id is still
 * told apart as a duplicate or a conflict, in a later batch or the same. */
static void memory_store_hashes_on_demand(void **state)
{
	(void)state;
	char *dir = keel_test_tmpdir();
	char url[512];
	snprintf(url, sizeof url, "sqlite:%s/keel.db", dir);
	const char *urls[] = {"memory:", url};
	struct hashes got[2] = {0};
	char *e1 = event("e-1", "vehicle.status_changed", "V-1", "parked", 1);
	char *e2 = event("e-2", "vehicle.status_changed", "V-1", "moving", 2);
	char *e2x = event("e-2", "vehicle.status_changed", "V-1", "broken", 2);
	char *e3 = event("e-3", "vehicle.status_changed", "V-2", "parked", 3);
	char *e3x = event("e-3", "vehicle.status_changed", "V-2", "moving", 3);
	char *e4 = event("e-4", "vehicle.status_changed", "V-2", "parked", 4);
	for (size_t k = 0; k < 2; k++) {
		struct keel_store *st = NULL;
		assert_int_equal(keel_store_open(urls[k], &st, NULL), 0);
		assert_int_equal(st->ops->hashes_on_demand, k == 0);
		struct keel_cartridge *c = NULL;
		struct seen seen = {0};
		struct keel_ingest *ing = ingester(st, &c, &seen, 100);
		const char *text[] = {e1, e2, e3, e3x, e3};
		for (size_t i = 0; i < 5; i++) {
			assert_int_equal(
			    keel_ingest_add(ing, text[i], strlen(text[i]), i), 0);
			if (i == 1)
				assert_int_equal(keel_ingest_flush(ing), 0);
		}
		assert_int_equal(keel_ingest_add(ing, e1, strlen(e1), 5), 0);
		assert_int_equal(keel_ingest_add(ing, e2x, strlen(e2x), 6), 0);
		assert_int_equal(keel_ingest_add(ing, e4, strlen(e4), 7), 0);
		assert_int_equal(keel_ingest_flush(ing), 0);
		const struct keel_report *r = keel_ingest_report(ing);
		assert_int_equal(r->accepted, 4);
		assert_int_equal(r->duplicates, 4);  /* e-3 twice, e-1, e-2 */
		assert_int_equal(r->conflicting, 2); /* e3x, e2x */
		struct keel_scan q = {.type = KEEL_REC_EVENT,
				      .tenant = keel_str_cstr("acme")};
		assert_int_equal(keel_store_scan(st, &q, collect_hash, &got[k]), 0);
		assert_int_equal(got[k].n, 4); /* e-4's hash asked for first here */
		keel_ingest_free(ing);
		keel_cartridge_free(c);
		keel_store_close(st);
	}
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(got[0].hash[i], got[1].hash[i]);
	free(e1), free(e2), free(e2x), free(e3), free(e3x), free(e4);
	keel_test_rmdir(dir);
	free(dir);
}

/* ------------------------------------------------- batches and commits */

/* Outcomes counted by kind (any number of them). */
struct told {
	size_t accepted; /* ACCEPTED and UNHANDLED */
	size_t other;
};

static void count_outcome(void *ud, uint64_t position, size_t seq,
			  enum keel_ingest_outcome o)
{
	(void)position;
	(void)seq;
	struct told *t = ud;
	if (o == KEEL_INGEST_ACCEPTED || o == KEEL_INGEST_UNHANDLED)
		t->accepted++;
	else
		t->other++;
}

/* An ingester at batch `batch` whose transactions stay open for an hour
 * unless flushed; positions are lines. */
static struct keel_ingest *grouping_ingester(struct keel_store *st,
					     struct keel_cartridge **c, struct told *told,
					     size_t batch, uint32_t interval_ms)
{
	char *err = NULL;
	assert_int_equal(keel_cartridge_load("fleet", c, &err), 0);
	struct keel_ingest_options o = {
	    .size = sizeof o,
	    .cartridge = *c,
	    .batch = batch,
	    .on_outcome = count_outcome,
	    .outcome_userdata = told,
	    .commit_interval_ms = interval_ms,
	};
	struct keel_ingest *ing = NULL;
	assert_int_equal(keel_ingest_new(st, &o, &ing), 0);
	return ing;
}

/* Events logged in a SQLite file as another connection sees them: what
 * is committed. 0 when there is no file yet. */
static int64_t committed_events(const char *path)
{
	if (access(path, F_OK) != 0)
		return 0;
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, "SELECT count(*) FROM events", -1, &st, NULL);
	int64_t n = 0;
	if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	else
		assert_string_equal(sqlite3_errmsg(db), "no such table: events");
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

static void sql(const char *path, const char *text)
{
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	char *err = NULL;
	int rc = sqlite3_exec(db, text, NULL, NULL, &err);
	if (rc != SQLITE_OK)
		fail_msg("%s: %s", text, err);
	sqlite3_close(db);
}

#define HOUR_MS 3600000u

/* A transaction holds every batch written within the commit interval:
 * 35 events at batch 10 write three batches (each behind its savepoint)
 * and leave five in the open batch, and none of it is committed - the
 * report says accepted 0, on_outcome was not called, another connection
 * sees no event. keel_ingest_flush commits all 35 and tells them. On the
 * memory store and on SQLite. */
static void commits_group_batches(void **state)
{
	(void)state;
	char *dir = keel_test_tmpdir();
	char url[512];
	snprintf(url, sizeof url, "sqlite:%s/keel.db", dir);
	const char *urls[] = {"memory:", url};
	struct keel_test_lines *t = keel_test_lines_generate(35, 1, 5, 0, 0);
	assert_int_equal(t->n, 35);
	for (size_t k = 0; k < 2; k++) {
		struct keel_store *st = NULL;
		assert_int_equal(keel_store_open(urls[k], &st, NULL), 0);
		struct keel_cartridge *c = NULL;
		struct told told = {0};
		struct keel_ingest *ing = grouping_ingester(st, &c, &told, 10, HOUR_MS);
		for (size_t i = 0; i < t->n; i++)
			assert_int_equal(keel_ingest_add(ing, t->lines[i], strlen(t->lines[i]),
							 i + 1),
					 0);
		const struct keel_report *r = keel_ingest_report(ing);
		assert_int_equal(r->read, 35);
		assert_int_equal(r->accepted, 0);
		assert_int_equal(r->batches, 0);
		assert_int_equal(r->commits, 0);
		assert_int_equal(told.accepted + told.other, 0);
		assert_int_equal(keel_ingest_pending(ing), 35);
		if (k == 1)
			assert_int_equal(committed_events(url + 7), 0);

		assert_int_equal(keel_ingest_flush(ing), 0);
		assert_int_equal(r->accepted, 35);
		assert_int_equal(r->batches, 4);
		assert_int_equal(r->commits, 1);
		assert_int_equal(told.accepted, 35);
		assert_int_equal(told.other, 0);
		assert_int_equal(keel_ingest_pending(ing), 0);
		if (k == 1)
			assert_int_equal(committed_events(url + 7), 35);
		keel_ingest_free(ing);
		keel_cartridge_free(c);
		keel_store_close(st);
	}
	keel_test_lines_free(t);
	keel_test_rmdir(dir);
	free(dir);
}

/* The id of a generated line (its first "id" member), malloc'd. */
static char *line_id(const char *line)
{
	const char *p = strstr(line, "\"id\":\"");
	assert_non_null(p);
	p += 6;
	const char *end = strchr(p, '"');
	assert_non_null(end);
	return strndup(p, (size_t)(end - p));
}

/* A batch the store refuses is rolled back alone: a trigger added to the
 * test's own SQLite file aborts the logging of line 25's event, so the
 * third batch (lines 21-30) fails while the first two, written in the
 * same open transaction, are committed, counted and told. The message
 * names lines 21-30. With the trigger gone the same input again finishes
 * the job, the first 20 as duplicates: the dump is that of a memory store
 * given the input once. */
static void a_failed_batch_is_rolled_back_alone(void **state)
{
	(void)state;
	char *dir = keel_test_tmpdir();
	char url[512];
	snprintf(url, sizeof url, "sqlite:%s/keel.db", dir);
	const char *path = url + 7;
	struct keel_test_lines *t = keel_test_lines_generate(35, 1, 6, 0, 0);
	assert_int_equal(t->n, 35);

	struct keel_store *st = NULL;
	assert_int_equal(keel_store_open(url, &st, NULL), 0); /* makes the schema */
	char *refused = line_id(t->lines[24]);
	char trigger[512];
	snprintf(trigger, sizeof trigger,
		 "CREATE TRIGGER refuse BEFORE INSERT ON events WHEN NEW.id = '%s' "
		 "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
		 refused);
	sql(path, trigger);

	struct keel_cartridge *c = NULL;
	struct told told = {0};
	struct keel_ingest *ing = grouping_ingester(st, &c, &told, 10, HOUR_MS);
	for (size_t i = 0; i < 29; i++)
		assert_int_equal(keel_ingest_add(ing, t->lines[i], strlen(t->lines[i]), i + 1),
				 0);
	assert_int_equal(told.accepted, 0);
	assert_int_equal(keel_ingest_add(ing, t->lines[29], strlen(t->lines[29]), 30),
			 KEEL_ESTORE);
	const char *msg = keel_ingest_errmsg(ing);
	assert_true(strncmp(msg, "batch of lines 21-30: ", 22) == 0);
	assert_non_null(strstr(msg, "refused by the test"));
	const struct keel_report *r = keel_ingest_report(ing);
	assert_int_equal(r->accepted, 20);
	assert_int_equal(r->batches, 2);
	assert_int_equal(r->commits, 1);
	assert_int_equal(told.accepted, 20);
	assert_int_equal(committed_events(path), 20);
	keel_ingest_free(ing);
	keel_cartridge_free(c);
	c = NULL;

	/* The trigger goes: the same input again. */
	sql(path, "DROP TRIGGER refuse");
	memset(&told, 0, sizeof told);
	ing = grouping_ingester(st, &c, &told, 10, HOUR_MS);
	for (size_t i = 0; i < t->n; i++)
		assert_int_equal(keel_ingest_add(ing, t->lines[i], strlen(t->lines[i]), i + 1),
				 0);
	assert_int_equal(keel_ingest_flush(ing), 0);
	r = keel_ingest_report(ing);
	assert_int_equal(r->accepted, 15);
	assert_int_equal(r->duplicates, 20);
	assert_int_equal(r->conflicting, 0);
	assert_int_equal(told.accepted, 15);
	assert_int_equal(told.other, 20);
	assert_int_equal(committed_events(path), 35);
	keel_ingest_free(ing);
	keel_cartridge_free(c);
	c = NULL;
	char *got = keel_test_dump(st, NULL);
	keel_store_close(st);

	struct keel_store *mem = NULL;
	assert_int_equal(keel_store_open("memory:", &mem, NULL), 0);
	memset(&told, 0, sizeof told);
	ing = grouping_ingester(mem, &c, &told, 10, HOUR_MS);
	for (size_t i = 0; i < t->n; i++)
		assert_int_equal(keel_ingest_add(ing, t->lines[i], strlen(t->lines[i]), i + 1),
				 0);
	assert_int_equal(keel_ingest_flush(ing), 0);
	keel_ingest_free(ing);
	keel_cartridge_free(c);
	char *want = keel_test_dump(mem, NULL);
	keel_store_close(mem);
	assert_true(strlen(want) > 1000);
	assert_string_equal(got, want);

	free(got);
	free(want);
	free(refused);
	keel_test_lines_free(t);
	keel_test_rmdir(dir);
	free(dir);
}

/* The child of told_only_what_is_committed: ingests every line into url at
 * batch 50, a commit every 100 ms (several in a run, even a fast one),
 * writing one byte to fd for each outcome accepted as on_outcome tells it
 * (write(2): the byte is out of the process when the call returns, so a
 * SIGKILL cannot take it back). */
struct teller {
	int fd;
};

static void tell_outcome(void *ud, uint64_t position, size_t seq,
			 enum keel_ingest_outcome o)
{
	(void)position;
	(void)seq;
	const struct teller *t = ud;
	if ((o == KEEL_INGEST_ACCEPTED || o == KEEL_INGEST_UNHANDLED) &&
	    write(t->fd, "a", 1) != 1)
		_exit(3);
}

static void ingest_telling(const char *url, int fd, const struct keel_test_lines *t)
{
	struct keel_store *st = NULL;
	struct keel_cartridge *c = NULL;
	char *err = NULL;
	if (keel_store_open(url, &st, NULL) || keel_cartridge_load("fleet", &c, &err))
		_exit(2);
	struct teller teller = {fd};
	struct keel_ingest_options o = {
	    .size = sizeof o,
	    .cartridge = c,
	    .batch = 50,
	    .on_outcome = tell_outcome,
	    .outcome_userdata = &teller,
	    .commit_interval_ms = 100,
	};
	struct keel_ingest *ing = NULL;
	if (keel_ingest_new(st, &o, &ing))
		_exit(2);
	for (size_t i = 0; i < t->n; i++)
		if (keel_ingest_add(ing, t->lines[i], strlen(t->lines[i]), i + 1))
			_exit(2);
	if (keel_ingest_flush(ing))
		_exit(2);
	keel_ingest_free(ing);
	keel_cartridge_free(c);
	keel_store_close(st);
	_exit(0);
}

static off_t file_size(int fd)
{
	struct stat sb;
	assert_int_equal(fstat(fd, &sb), 0);
	return sb.st_size;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int count_record(void *ud, const struct keel_record *r)
{
	(void)r;
	(*(int64_t *)ud)++;
	return 0;
}

/* Events logged in the store at url, through the library (any store);
 * -1 when it cannot be opened (a SQLite file not made yet). */
static int64_t stored_events(const char *url)
{
	struct keel_store *st = NULL;
	if (keel_store_open_existing(url, &st, NULL) != 0)
		return -1;
	struct keel_ptrvec tenants = {0};
	assert_int_equal(keel_store_tenants(st, &tenants), 0);
	int64_t n = 0;
	for (size_t i = 0; i < tenants.len; i++) {
		struct keel_scan q = {.type = KEEL_REC_EVENT,
				      .tenant = keel_str_cstr(tenants.items[i])};
		assert_int_equal(keel_store_scan(st, &q, count_record, &n), 0);
		free(tenants.items[i]);
	}
	keel_ptrvec_free(&tenants);
	keel_store_close(st);
	return n;
}

/* One child of told_only_what_is_committed on the fresh store url:
 * killed with SIGKILL after kill_ms (never, when negative). Returns
 * whether it was; asserts what it told against what the store holds. */
static bool tell_round(const char *url, const char *told_path,
		       const struct keel_test_lines *t, long kill_ms)
{
	int fd = open(told_path, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0600);
	assert_true(fd >= 0);
	fflush(NULL);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0)
		ingest_telling(url, fd, t);
	int status = 0;
	if (kill_ms >= 0) {
		/* The random moment of the kill is the point of this test. */
		sleep_ms(kill_ms);
		kill(child, SIGKILL);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	bool killed = WIFSIGNALED(status);
	if (killed) {
		assert_int_equal(WTERMSIG(status), SIGKILL);
	} else {
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	int64_t told = file_size(fd);
	int64_t stored = stored_events(url);
	close(fd);
	print_message("%s after %ld ms: told %lld accepted, %lld in the store\n",
		      killed ? "killed" : "finished", kill_ms, (long long)told,
		      (long long)stored);
	assert_true(told <= (stored < 0 ? 0 : stored));
	if (!killed)
		assert_int_equal(told, stored);
	return killed;
}

/* A fresh store's URL: SQLite in dir, or a new database on the MySQL
 * fixture's server (its "fresh" command). */
typedef void (*fresh_fn)(const char *dir, int n, char *url, size_t size);

static void fresh_sqlite(const char *dir, int n, char *url, size_t size)
{
	snprintf(url, size, "sqlite:%s/keel%d.db", dir, n);
}

#ifdef KEEL_WITH_MYSQL
static void fresh_mysql(const char *dir, int n, char *url, size_t size)
{
	(void)dir;
	(void)n;
	FILE *p = popen(getenv("KEEL_TEST_MYSQL_FRESH"), "r");
	assert_non_null(p);
	assert_non_null(fgets(url, (int)size, p));
	url[strcspn(url, "\n")] = 0;
	assert_int_equal(pclose(p), 0);
}
#endif

#ifdef KEEL_WITH_POSTGRES
static void fresh_postgres(const char *dir, int n, char *url, size_t size)
{
	(void)dir;
	(void)n;
	FILE *p = popen(getenv("KEEL_TEST_PG_FRESH"), "r");
	assert_non_null(p);
	assert_non_null(fgets(url, (int)size, p));
	url[strcspn(url, "\n")] = 0;
	assert_int_equal(pclose(p), 0);
}
#endif

/* Nothing is told accepted before the commit that holds it, even by a
 * process that dies: a child ingests a generated stream into a fresh
 * store, a transaction holding 100 ms of batches, telling every accepted outcome by a byte written to
 * a file, and is killed with SIGKILL at a random moment of a full run's
 * length (measured first) - mostly inside an open transaction whose
 * batches are written and released but not committed. Every event told
 * accepted must then be in the store. Had the outcomes been told before
 * the commit (at a batch's release), the kill would leave more told than
 * stored. */
static void told_only_what_is_committed(fresh_fn fresh)
{
	char *dir = keel_test_tmpdir();
	struct keel_test_lines *t = keel_test_lines_generate(4000, 2, 9, 0.05, 0.05);
	char url[512], told_path[512];
	snprintf(told_path, sizeof told_path, "%s/told", dir);
	fresh(dir, 0, url, sizeof url);
	long start = now_ms();
	assert_false(tell_round(url, told_path, t, -1));
	long full_ms = now_ms() - start + 1;
	srand(20261201);
	int kills = 0;
	/* Four kills (a run faster than the first may finish first). */
	for (int round = 1; kills < 4 && round <= 20; round++) {
		fresh(dir, round, url, sizeof url);
		kills += tell_round(url, told_path, t, rand() % full_ms);
	}
	assert_int_equal(kills, 4);
	keel_test_lines_free(t);
	keel_test_rmdir(dir);
	free(dir);
}

static void told_only_what_is_committed_sqlite(void **state)
{
	(void)state;
	told_only_what_is_committed(fresh_sqlite);
}

#ifdef KEEL_WITH_MYSQL
static void told_only_what_is_committed_mysql(void **state)
{
	(void)state;
	const char *fresh = getenv("KEEL_TEST_MYSQL_FRESH");
	if (!fresh || !*fresh) /* before anything is allocated */
		keel_test_skip("no MySQL server: KEEL_TEST_MYSQL_FRESH is unset "
			       "(the mysql_server ctest fixture sets it)");
	told_only_what_is_committed(fresh_mysql);
}
#endif

/* A fleet event of a tenant new to the store. */
static char *newcomer_event(const char *tenant, const char *id, int minute)
{
	char *buf = malloc(1024);
	snprintf(buf, 1024,
		 "{\"specversion\":\"1.0\",\"id\":\"%s\",\"tenant\":\"%s\","
		 "\"type\":\"fleet.vehicle.status_changed\",\"source\":\"test\","
		 "\"time\":\"2024-05-01T10:%02d:00Z\","
		 "\"data\":{\"vehicle_id\":\"V-1\",\"status\":\"parked\",\"reason\":null}}",
		 id, tenant, minute);
	return buf;
}

/* The store fails while an event is offered, before its batch is written
 * (a new tenant's recorded cartridge cannot be read: the table renamed
 * away under the ingester, between its commits): that batch is dropped
 * unwritten, as a batch whose write failed is, and no later flush commits
 * what it held. */
static void a_store_failure_while_adding_drops_the_open_batch(void **state)
{
	(void)state;
	char *dir = keel_test_tmpdir();
	char url[512];
	snprintf(url, sizeof url, "sqlite:%s/keel.db", dir);
	const char *path = url + 7;
	struct keel_test_lines *t = keel_test_lines_generate(15, 1, 6, 0, 0);
	struct keel_store *st = NULL;
	assert_int_equal(keel_store_open(url, &st, NULL), 0);
	struct keel_cartridge *c = NULL;
	struct told told = {0};
	struct keel_ingest *ing =
	    grouping_ingester(st, &c, &told, 10, KEEL_COMMIT_EVERY_BATCH);
	for (size_t i = 0; i < t->n; i++)
		assert_int_equal(keel_ingest_add(ing, t->lines[i], strlen(t->lines[i]), i + 1),
				 0);
	assert_int_equal(keel_ingest_pending(ing), 5);
	sql(path, "ALTER TABLE tenant_cartridges RENAME TO tenant_cartridges_away");
	char *other = newcomer_event("newcomer", "n-1", 1);
	assert_int_equal(keel_ingest_add(ing, other, strlen(other), 16), KEEL_ESTORE);
	const char *msg = keel_ingest_errmsg(ing);
	assert_true(strncmp(msg, "batch of lines 11-15 not written: line 16: ", 43) == 0);
	assert_non_null(strstr(msg, "no such table"));
	assert_int_equal(keel_ingest_pending(ing), 0);
	assert_int_equal(told.accepted, 10);
	assert_int_equal(committed_events(path), 10);
	sql(path, "ALTER TABLE tenant_cartridges_away RENAME TO tenant_cartridges");
	assert_int_equal(keel_ingest_flush(ing), 0);
	assert_int_equal(keel_ingest_report(ing)->accepted, 10);
	assert_int_equal(committed_events(path), 10);
	/* Offered again, the dropped ones go in. */
	for (size_t i = 10; i < t->n; i++)
		assert_int_equal(keel_ingest_add(ing, t->lines[i], strlen(t->lines[i]), i + 1),
				 0);
	assert_int_equal(keel_ingest_add(ing, other, strlen(other), 16), 0);
	assert_int_equal(keel_ingest_flush(ing), 0);
	assert_int_equal(told.accepted, 16);
	assert_int_equal(committed_events(path), 16);
	keel_ingest_free(ing);
	keel_cartridge_free(c);
	keel_store_close(st);
	free(other);
	keel_test_lines_free(t);
	keel_test_rmdir(dir);
	free(dir);
}

/* A transaction that was to record a new tenant's cartridge failed (here
 * because another writer recorded one meanwhile; a commit whose outcome is
 * unknown leaves the same doubt): the ingester asks the store again at the
 * tenant's next event, finds the record and goes on, instead of failing
 * every later transaction on a record it believes missing. */
static void a_new_tenant_is_asked_again_after_a_failed_commit(void **state)
{
	(void)state;
	struct keel_store *st = NULL;
	assert_int_equal(keel_store_open("memory:", &st, NULL), 0);
	struct keel_cartridge *c1 = NULL, *c2 = NULL;
	struct told told1 = {0}, told2 = {0};
	struct keel_ingest *one = grouping_ingester(st, &c1, &told1, 10, HOUR_MS);
	struct keel_ingest *two = grouping_ingester(st, &c2, &told2, 10, HOUR_MS);
	char *ev[3] = {newcomer_event("newcomer", "n-1", 1), newcomer_event("newcomer", "n-2", 2),
		       newcomer_event("newcomer", "n-3", 3)};
	assert_int_equal(keel_ingest_add(one, ev[0], strlen(ev[0]), 1), 0);
	assert_int_equal(keel_ingest_add(two, ev[1], strlen(ev[1]), 1), 0);
	assert_int_equal(keel_ingest_flush(two), 0); /* records the cartridge */
	assert_int_equal(keel_ingest_flush(one), KEEL_ESTORE);
	assert_non_null(strstr(keel_ingest_errmsg(one), "recorded already"));
	assert_int_equal(keel_ingest_add(one, ev[2], strlen(ev[2]), 2), 0);
	assert_int_equal(keel_ingest_add(one, ev[0], strlen(ev[0]), 3), 0);
	assert_int_equal(keel_ingest_flush(one), 0);
	assert_int_equal(told1.accepted, 2);
	assert_int_equal(told2.accepted, 1);
	keel_ingest_free(one);
	keel_ingest_free(two);
	for (int i = 0; i < 3; i++)
		free(ev[i]);
	keel_cartridge_free(c1);
	keel_cartridge_free(c2);
	keel_store_close(st);
}
#ifdef KEEL_WITH_POSTGRES
static void told_only_what_is_committed_postgres(void **state)
{
	(void)state;
	const char *fresh = getenv("KEEL_TEST_PG_FRESH");
	if (!fresh || !*fresh)
		keel_test_skip("no PostgreSQL server: KEEL_TEST_PG_FRESH is unset "
			       "(the postgres_server ctest fixture sets it)");
	told_only_what_is_committed(fresh_postgres);
}
#endif

const struct CMUnitTest tests[] = {
    cmocka_unit_test(outcomes_of_a_batch),
    cmocka_unit_test(no_outcomes_for_a_failed_batch),
    cmocka_unit_test(memory_store_hashes_on_demand),
    cmocka_unit_test(commits_group_batches),
    cmocka_unit_test(a_failed_batch_is_rolled_back_alone),
    cmocka_unit_test(a_store_failure_while_adding_drops_the_open_batch),
    cmocka_unit_test(a_new_tenant_is_asked_again_after_a_failed_commit),
    cmocka_unit_test(told_only_what_is_committed_sqlite),
#ifdef KEEL_WITH_MYSQL
    cmocka_unit_test(told_only_what_is_committed_mysql),
#endif
#ifdef KEEL_WITH_POSTGRES
    cmocka_unit_test(told_only_what_is_committed_postgres),
#endif
};

KEEL_TEST_MAIN(tests)

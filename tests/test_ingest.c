/*
 * test_ingest.c - the ingester's per-event outcomes (on_outcome in
 * struct keel_ingest_options): what each event of a committed batch
 * became, in the order it was added, with its position and its place in
 * the batch; nothing for rejected events, nothing for a batch that failed.
 */
#include "support.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

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

const struct CMUnitTest tests[] = {
    cmocka_unit_test(outcomes_of_a_batch),
    cmocka_unit_test(no_outcomes_for_a_failed_batch),
    cmocka_unit_test(memory_store_hashes_on_demand),
};

KEEL_TEST_MAIN(tests)

/*
 * handoff.h - one job at a time handed to a thread of its own, so that
 * the caller fills the next job while the thread does the last one
 * (the batcher's writer, src/ingest.c). Handing a job waits until the
 * thread is done with the one before; a job's error comes back at the
 * caller's next keel_handoff_give or keel_handoff_wait, once. The thread
 * starts with the first job; if it cannot start, jobs are done on the
 * caller's thread. Not part of the API.
 */
#ifndef KEEL_HANDOFF_H
#define KEEL_HANDOFF_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

typedef int (*keel_handoff_fn)(void *ctx, void *job, bool flag);

struct keel_handoff {
	keel_handoff_fn work;
	void *ctx;
	pthread_mutex_t lock; /* guards the fields below; callers may share it */
	pthread_cond_t changed;
	pthread_t thread;
	bool started, stop;
	void *job;	 /* handed and not done; NULL: the thread is idle */
	bool flag;	 /* the job's argument */
	size_t job_size; /* the caller's measure of the job, until it is done */
	int failed;	 /* the first error not yet given back */
};

void keel_handoff_init(struct keel_handoff *h, keel_handoff_fn work, void *ctx);
/* Waits for the job before, then hands job (size: see job_size). Returns
 * the error of a job before instead (job is then not handed). */
int keel_handoff_give(struct keel_handoff *h, void *job, bool flag, size_t size);
/* Waits until the thread is idle; returns the error of a job not yet
 * given back, if any. */
int keel_handoff_wait(struct keel_handoff *h);
/* Waits until the thread is idle, leaving any error to be given back. */
void keel_handoff_idle(struct keel_handoff *h);
/* Waits for the last job, then ends the thread. */
void keel_handoff_free(struct keel_handoff *h);

#endif

/*
 * handoff.c - see handoff.h.
 */
#include "handoff.h"

void keel_handoff_init(struct keel_handoff *h, keel_handoff_fn work, void *ctx)
{
	*h = (struct keel_handoff){.work = work, .ctx = ctx};
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->changed, NULL);
}

static void *keel_handoff_main(void *arg)
{
	struct keel_handoff *h = arg;
	pthread_mutex_lock(&h->lock);
	for (;;) {
		while (!h->job && !h->stop)
			pthread_cond_wait(&h->changed, &h->lock);
		if (!h->job)
			break;
		void *job = h->job;
		bool flag = h->flag;
		pthread_mutex_unlock(&h->lock);
		int rc = h->work(h->ctx, job, flag);
		pthread_mutex_lock(&h->lock);
		if (rc && !h->failed)
			h->failed = rc;
		h->job = NULL;
		h->job_size = 0;
		pthread_cond_broadcast(&h->changed);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

/* Called with the lock held. */
static void keel_handoff_until_idle(struct keel_handoff *h)
{
	while (h->job)
		pthread_cond_wait(&h->changed, &h->lock);
}

int keel_handoff_give(struct keel_handoff *h, void *job, bool flag, size_t size)
{
	pthread_mutex_lock(&h->lock);
	keel_handoff_until_idle(h);
	int rc = h->failed;
	h->failed = 0;
	if (rc == 0 && !h->started)
		h->started = pthread_create(&h->thread, NULL, keel_handoff_main, h) == 0;
	if (rc == 0 && h->started) {
		h->job = job;
		h->flag = flag;
		h->job_size = size;
		pthread_cond_broadcast(&h->changed);
	}
	bool inline_job = rc == 0 && !h->started;
	pthread_mutex_unlock(&h->lock);
	/* no thread to be had: the job is done here, as with no handoff */
	return inline_job ? h->work(h->ctx, job, flag) : rc;
}

int keel_handoff_wait(struct keel_handoff *h)
{
	pthread_mutex_lock(&h->lock);
	keel_handoff_until_idle(h);
	int rc = h->failed;
	h->failed = 0;
	pthread_mutex_unlock(&h->lock);
	return rc;
}

void keel_handoff_idle(struct keel_handoff *h)
{
	pthread_mutex_lock(&h->lock);
	keel_handoff_until_idle(h);
	pthread_mutex_unlock(&h->lock);
}

void keel_handoff_free(struct keel_handoff *h)
{
	pthread_mutex_lock(&h->lock);
	keel_handoff_until_idle(h);
	h->stop = true;
	pthread_cond_broadcast(&h->changed);
	bool started = h->started;
	pthread_mutex_unlock(&h->lock);
	if (started)
		pthread_join(h->thread, NULL);
	pthread_cond_destroy(&h->changed);
	pthread_mutex_destroy(&h->lock);
}

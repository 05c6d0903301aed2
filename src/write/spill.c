/*
 * spill.c - the external sort of spill.h: sorted runs in one unlinked
 * temporary file, merged through a binary heap of the runs' heads.
 */
#include "spill.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define KEEL_SPILL_READ (64 * 1024) /* read buffer a run, at most */

struct keel_spill_run {
	uint64_t off, end;  /* the run's bytes left in the file */
	unsigned char *buf; /* what was read of it */
	size_t len, at;
};

int keel_spill_tmpfile(char *err, size_t errlen)
{
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	size_t n = strlen(dir) + 32;
	char *path = keel_xmalloc(n);
	snprintf(path, n, "%s/keel-replay-XXXXXX", dir);
	int fd = mkstemp(path);
	if (fd < 0)
		snprintf(err, errlen, "cannot create a temporary file in %s: %s", dir,
			 strerror(errno));
	else
		unlink(path); /* gone when closed, whatever happens */
	free(path);
	return fd;
}

void keel_spill_init(struct keel_spill *sp, size_t rec, keel_spill_cmp cmp,
		     size_t budget)
{
	memset(sp, 0, sizeof *sp);
	sp->rec = rec;
	sp->cmp = cmp;
	sp->cap = budget / rec ? budget / rec : 1;
	sp->fd = -1;
}

void keel_spill_free(struct keel_spill *sp)
{
	for (size_t i = 0; i < sp->nruns; i++)
		free(sp->runs[i].buf);
	free(sp->runs);
	free(sp->heap);
	free(sp->buf);
	if (sp->fd >= 0)
		close(sp->fd);
	memset(sp, 0, sizeof *sp);
	sp->fd = -1;
}

static int keel_spill_write(struct keel_spill *sp, const void *p, size_t n)
{
	const unsigned char *c = p;
	while (n) {
		ssize_t w = pwrite(sp->fd, c, n, (off_t)sp->written);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			snprintf(sp->err, sizeof sp->err,
				 "writing a temporary file: %s",
				 w < 0 ? strerror(errno) : "no space");
			return -1;
		}
		c += w;
		n -= (size_t)w;
		sp->written += (uint64_t)w;
	}
	return 0;
}

/* Sorts the buffer and writes it out as one run. */
static int keel_spill_flush(struct keel_spill *sp)
{
	if (!sp->n)
		return 0;
	if (sp->fd < 0 && (sp->fd = keel_spill_tmpfile(sp->err, sizeof sp->err)) < 0)
		return -1;
	qsort(sp->buf, sp->n, sp->rec, sp->cmp);
	if (sp->nruns == sp->runs_cap) {
		sp->runs_cap = sp->runs_cap ? 2 * sp->runs_cap : 8;
		sp->runs = keel_xrealloc(sp->runs, sp->runs_cap * sizeof *sp->runs);
	}
	struct keel_spill_run *r = &sp->runs[sp->nruns++];
	memset(r, 0, sizeof *r);
	r->off = sp->written;
	if (keel_spill_write(sp, sp->buf, sp->n * sp->rec))
		return -1;
	r->end = sp->written;
	sp->n = 0;
	return 0;
}

int keel_spill_add(struct keel_spill *sp, const void *rec)
{
	if (!sp->buf)
		sp->buf = keel_xmalloc(sp->cap * sp->rec);
	if (sp->n == sp->cap && keel_spill_flush(sp))
		return -1;
	memcpy(sp->buf + sp->n * sp->rec, rec, sp->rec);
	sp->n++;
	sp->count++;
	return 0;
}

/* The run's next record, reading more of it when its buffer is spent:
 * NULL at its end or on an error (sp->err set then). */
static const unsigned char *keel_spill_head(struct keel_spill *sp,
					    struct keel_spill_run *r, int *rc)
{
	*rc = 0;
	if (r->at + sp->rec <= r->len)
		return r->buf + r->at;
	if (r->off >= r->end)
		return NULL;
	size_t want = sp->readsz;
	if (want > r->end - r->off)
		want = (size_t)(r->end - r->off);
	if (!r->buf)
		r->buf = keel_xmalloc(sp->readsz);
	size_t got = 0;
	while (got < want) {
		ssize_t n = pread(sp->fd, r->buf + got, want - got, (off_t)(r->off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(sp->err, sizeof sp->err, "reading a temporary file: %s",
				 n < 0 ? strerror(errno) : "it ended early");
			*rc = -1;
			return NULL;
		}
		got += (size_t)n;
	}
	r->off += got;
	r->len = got;
	r->at = 0;
	return r->buf;
}

static int keel_spill_less(struct keel_spill *sp, size_t a, size_t b)
{
	const struct keel_spill_run *x = &sp->runs[a], *y = &sp->runs[b];
	int c = sp->cmp(x->buf + x->at, y->buf + y->at);
	return c < 0 || (c == 0 && a < b); /* equal records: the earlier run first */
}

static void keel_spill_down(struct keel_spill *sp, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < sp->nheap && keel_spill_less(sp, sp->heap[l], sp->heap[m]))
			m = l;
		if (r < sp->nheap && keel_spill_less(sp, sp->heap[r], sp->heap[m]))
			m = r;
		if (m == i)
			return;
		size_t t = sp->heap[i];
		sp->heap[i] = sp->heap[m];
		sp->heap[m] = t;
		i = m;
	}
}

int keel_spill_sort(struct keel_spill *sp)
{
	sp->pos = 0;
	if (!sp->nruns) { /* it all fit: sort in memory */
		if (sp->n > 1)
			qsort(sp->buf, sp->n, sp->rec, sp->cmp);
		return 0;
	}
	if (keel_spill_flush(sp))
		return -1;
	/* The runs' read buffers take the buffer's place, sharing its size
	 * (each at most KEEL_SPILL_READ, at least one record), so that
	 * merging takes no more memory than sorting did however many runs
	 * there are. */
	size_t share = sp->cap * sp->rec / sp->nruns;
	if (share > KEEL_SPILL_READ)
		share = KEEL_SPILL_READ;
	sp->readsz = share < sp->rec ? sp->rec : share - share % sp->rec;
	free(sp->buf);
	sp->buf = NULL;
	sp->heap = keel_xmalloc(sp->nruns * sizeof *sp->heap);
	sp->nheap = 0;
	for (size_t i = 0; i < sp->nruns; i++) {
		int rc;
		if (keel_spill_head(sp, &sp->runs[i], &rc))
			sp->heap[sp->nheap++] = i;
		else if (rc)
			return -1;
	}
	for (size_t i = sp->nheap / 2; i-- > 0;)
		keel_spill_down(sp, i);
	return 0;
}

int keel_spill_next(struct keel_spill *sp, void *out)
{
	if (!sp->nruns) {
		if (sp->pos >= sp->n)
			return 0;
		memcpy(out, sp->buf + sp->pos++ * sp->rec, sp->rec);
		return 1;
	}
	if (!sp->nheap)
		return 0;
	struct keel_spill_run *r = &sp->runs[sp->heap[0]];
	memcpy(out, r->buf + r->at, sp->rec);
	r->at += sp->rec;
	int rc;
	if (!keel_spill_head(sp, r, &rc)) {
		if (rc)
			return -1;
		sp->heap[0] = sp->heap[--sp->nheap];
	}
	if (sp->nheap)
		keel_spill_down(sp, 0);
	return 1;
}

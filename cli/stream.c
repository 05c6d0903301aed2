/*
 * stream.c - live input for keel ingest (see stream.h).
 *
 * The line thread copies each line the reader returns into a small bounded
 * queue (so a fast producer is slowed down, never buffered without end);
 * the ingesting thread takes lines with a timeout. The follow thread reads
 * a growing file with read() and, at its end, polls the size every
 * FOLLOW_POLL_MS; what it reads goes into a pipe whose other end a normal
 * keel_reader reads, so compression and line rules are the reader's own.
 */
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define QUEUE_CAP 1024
#define FOLLOW_POLL_MS 100

struct cli_stream {
	struct keel_reader *r;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t not_empty, not_full;
	struct cli_line q[QUEUE_CAP];
	size_t head, count;
	bool eof, failed, stop, finished;
	char *errmsg;
	struct cli_line cur; /* handed out, freed on the next call */
};

static void *stream_main(void *arg)
{
	struct cli_stream *st = arg;
	for (;;) {
		const char *line;
		size_t len;
		uint64_t lineno;
		bool too_long = false;
		int rc = keel_reader_next(st->r, &line, &len, &lineno, &too_long);
		pthread_mutex_lock(&st->mu);
		if (rc != 1) {
			if (rc < 0) {
				st->failed = true;
				const char *m = keel_reader_errmsg(st->r);
				st->errmsg = strdup(m && *m ? m : keel_strerror(rc));
			}
			st->eof = true;
			st->finished = true;
			pthread_cond_broadcast(&st->not_empty);
			pthread_mutex_unlock(&st->mu);
			return NULL;
		}
		while (st->count == QUEUE_CAP && !st->stop)
			pthread_cond_wait(&st->not_full, &st->mu);
		if (st->stop) {
			st->finished = true;
			pthread_mutex_unlock(&st->mu);
			return NULL;
		}
		pthread_mutex_unlock(&st->mu);

		char *copy = malloc(len + 1);
		if (!copy) {
			fputs("keel ingest: out of memory\n", stderr);
			abort();
		}
		memcpy(copy, line, len);
		copy[len] = 0;

		pthread_mutex_lock(&st->mu);
		struct cli_line *slot = &st->q[(st->head + st->count) % QUEUE_CAP];
		*slot = (struct cli_line){copy, len, lineno, too_long};
		st->count++;
		pthread_cond_signal(&st->not_empty);
		pthread_mutex_unlock(&st->mu);
	}
}

struct cli_stream *cli_stream_start(struct keel_reader *r)
{
	struct cli_stream *st = calloc(1, sizeof *st);
	if (!st)
		return NULL;
	st->r = r;
	pthread_mutex_init(&st->mu, NULL);
	pthread_cond_init(&st->not_empty, NULL);
	pthread_cond_init(&st->not_full, NULL);
	if (pthread_create(&st->thread, NULL, stream_main, st) != 0) {
		pthread_mutex_destroy(&st->mu);
		pthread_cond_destroy(&st->not_empty);
		pthread_cond_destroy(&st->not_full);
		free(st);
		return NULL;
	}
	return st;
}

int cli_stream_next(struct cli_stream *st, int timeout_ms, struct cli_line *out)
{
	free(st->cur.text);
	st->cur.text = NULL;

	pthread_mutex_lock(&st->mu);
	if (st->count == 0 && !st->eof && timeout_ms > 0) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += timeout_ms / 1000;
		ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		while (st->count == 0 && !st->eof)
			if (pthread_cond_timedwait(&st->not_empty, &st->mu, &ts) ==
			    ETIMEDOUT)
				break;
	}
	int rc;
	if (st->count) {
		st->cur = st->q[st->head];
		st->head = (st->head + 1) % QUEUE_CAP;
		st->count--;
		pthread_cond_signal(&st->not_full);
		*out = st->cur;
		rc = 1;
	} else if (st->eof) {
		rc = st->failed ? -2 : -1;
	} else {
		rc = 0;
	}
	pthread_mutex_unlock(&st->mu);
	return rc;
}

const char *cli_stream_errmsg(const struct cli_stream *st)
{
	return st->errmsg ? st->errmsg : "";
}

/* A stream whose thread is still blocked in a read when it is stopped:
 * kept reachable on purpose, since the thread uses it (and the reader)
 * until the process exits. */
static struct cli_stream *stream_abandoned;

bool cli_stream_stop(struct cli_stream *st)
{
	if (!st)
		return true;
	pthread_mutex_lock(&st->mu);
	st->stop = true;
	pthread_cond_broadcast(&st->not_full);
	bool finished = st->finished;
	pthread_mutex_unlock(&st->mu);
	if (!finished) {
		/* Blocked in a read: it ends with the process. */
		stream_abandoned = st;
		pthread_detach(st->thread);
		return false;
	}
	pthread_join(st->thread, NULL);
	free(st->cur.text);
	for (size_t i = 0; i < st->count; i++)
		free(st->q[(st->head + i) % QUEUE_CAP].text);
	free(st->errmsg);
	pthread_mutex_destroy(&st->mu);
	pthread_cond_destroy(&st->not_empty);
	pthread_cond_destroy(&st->not_full);
	free(st);
	return true;
}

/* ---------------------------------------------------------------- follow */

struct cli_follow {
	char *path;
	int in_fd;
	int out_fd; /* write end of the pipe */
	pthread_mutex_t mu;
	bool stop, done;
};

static void follow_free(struct cli_follow *f)
{
	pthread_mutex_destroy(&f->mu);
	free(f->path);
	free(f);
}

static bool follow_stopped(struct cli_follow *f)
{
	pthread_mutex_lock(&f->mu);
	bool stop = f->stop;
	pthread_mutex_unlock(&f->mu);
	return stop;
}

static bool write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		p += w;
		n -= (size_t)w;
	}
	return true;
}

static void *follow_main(void *arg)
{
	struct cli_follow *f = arg;
	static const struct timespec pause = {0, FOLLOW_POLL_MS * 1000000L};
	char buf[1 << 16];
	off_t offset = 0;
	while (!follow_stopped(f)) {
		ssize_t n = read(f->in_fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "keel ingest: \"%s\": cannot read: %s\n", f->path,
				strerror(errno));
			break;
		}
		if (n > 0) {
			if (!write_all(f->out_fd, buf, (size_t)n))
				break; /* the reader is gone */
			offset += n;
			continue;
		}
		/* At the end: wait for the file to grow; start again if it was
		 * truncated (a log rewritten in place). */
		struct stat sb;
		if (fstat(f->in_fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
		    sb.st_size < offset) {
			fprintf(stderr,
				"keel ingest: \"%s\": file truncated, reading it "
				"again from the start\n",
				f->path);
			lseek(f->in_fd, 0, SEEK_SET);
			offset = 0;
			continue;
		}
		nanosleep(&pause, NULL);
	}
	close(f->out_fd);
	close(f->in_fd);
	pthread_mutex_lock(&f->mu);
	bool stopped = f->stop;
	f->done = true;
	pthread_mutex_unlock(&f->mu);
	if (stopped)
		follow_free(f);
	return NULL;
}

struct cli_follow *cli_follow_start(const char *path, int *fd, char **err)
{
	*err = NULL;
	/* O_NONBLOCK only for the open itself: a FIFO without a writer must
	 * not block here; reads block as usual. */
	int in = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (in >= 0)
		fcntl(in, F_SETFL, fcntl(in, F_GETFL) & ~O_NONBLOCK);
	if (in < 0) {
		const char *why = strerror(errno);
		size_t n = strlen(path) + strlen(why) + 32;
		*err = malloc(n);
		if (*err)
			snprintf(*err, n, "cannot open \"%s\": %s", path, why);
		return NULL;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) {
		close(in);
		*err = strdup("cannot create a pipe");
		return NULL;
	}
	struct cli_follow *f = calloc(1, sizeof *f);
	if (!f || !(f->path = strdup(path))) {
		fputs("keel ingest: out of memory\n", stderr);
		abort();
	}
	f->in_fd = in;
	f->out_fd = p[1];
	pthread_mutex_init(&f->mu, NULL);
	pthread_t t;
	if (pthread_create(&t, NULL, follow_main, f) != 0) {
		close(in);
		close(p[0]);
		close(p[1]);
		follow_free(f);
		*err = strdup("cannot start a thread");
		return NULL;
	}
	pthread_detach(t);
	*fd = p[0];
	return f;
}

void cli_follow_stop(struct cli_follow *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	bool done = f->done;
	f->stop = true;
	pthread_mutex_unlock(&f->mu);
	if (done)
		follow_free(f);
}

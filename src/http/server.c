/*
 * server.c - keel serve: the HTTP API of SPEC section 10 on libmicrohttpd.
 *
 * Organisation: start/stop and the daemon's options first; then the
 * per-connection watchdog (header and request timeouts, which
 * libmicrohttpd 0.9.75 lacks); then the access handler, which routes a
 * request to POST /v1/events (ingest), the read endpoints, /healthz and
 * /metrics.
 *
 * Concurrency model (docs/http.md): libmicrohttpd's thread pool, each
 * worker running its own epoll loop, so a slow or idle client costs a
 * socket and a little memory, never a thread. Handlers run on the worker
 * that owns the connection. Writes go through one writer thread with
 * group commit: a worker splits and checks a POST, queues it and
 * suspends its connection (the worker goes on serving its other
 * connections); the writer takes every POST queued while it was busy,
 * ingests them as one batch (one transaction), and resumes each
 * connection with that request's own outcome. Everything else (reading
 * and splitting bodies, tenant checks, building answers) runs in
 * parallel. Reads on SQL stores use their own handles from a pool, so on
 * SQLite in WAL mode readers never wait for the writer nor block it; the
 * memory store has one state, so its reads take the writer's mutex, which
 * the writer holds while it ingests.
 */
#include "http.h"

#include "keel.h"
#include "../json.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_LISTEN "127.0.0.1:8080"
#define DEFAULT_THREADS 4
#define DEFAULT_MAX_BODY (16u << 20)
#define DEFAULT_MAX_CONNECTIONS 1000
#define DEFAULT_MAX_PER_IP 64
#define DEFAULT_IDLE_TIMEOUT 30
#define DEFAULT_HEADER_TIMEOUT 10
#define DEFAULT_REQUEST_TIMEOUT 60
#define DEFAULT_GRACE 10
#define DEFAULT_MAX_BUFFERED ((size_t)256 << 20)
/* Per-connection memory for headers and the read buffer: it bounds the
 * request line and headers a client can send. */
#define CONNECTION_MEMORY (64u << 10)
#define WATCHDOG_TICK_MS 100
/* Small, frequent checkpoints: docs/http.md, "Single-event POSTs on SQLite". */
#define CHECKPOINT_INTERVAL_MS 10
/* The writer stops adding POSTs to a batch once it holds this many
 * events (one POST is never split). */
#define GROUP_MAX_EVENTS 4096
/* How long a stop waits for resumed connections to be answered. */
#define RESUME_WAIT_S 5

/* ------------------------------------------------------------------ types */

/* One TCP connection, for the watchdog (MHD's socket_context). */
struct conn {
	struct conn *prev, *next;
	int fd;
	/* Monotonic microseconds by which the client must have sent what it
	 * owes (headers, or a whole request); INT64_MAX while the server
	 * itself is working on the request. */
	atomic_int_fast64_t deadline;
	bool cut;
};

enum route {
	ROUTE_EVENTS,
	ROUTE_EVENTS_QUEUED, /* with the writer; answered when resumed */
	ROUTE_NULL_EVENTS,
	ROUTE_READ, /* GET: answered when the (empty) body is done */
	ROUTE_DONE, /* an answer was queued on the first call */
};

enum body_kind {
	BODY_SINGLE,
	BODY_BATCH,
	BODY_NDJSON,
};

/* A POST's events, queued for the writer, and what became of them. The
 * writer fills in the outcome, then resumes the connection; from then on
 * only the connection's worker touches it. */
struct ingest_job {
	struct ingest_job *next;
	struct MHD_Connection *connection;
	const char *base; /* the body */
	struct keel_http_item *items;
	size_t nitems;
	/* The outcome */
	int rc; /* 0, or the store error that rolled the batch back */
	uint64_t accepted, duplicates, conflicting, unhandled, rejected;
	struct keel_buf rejects; /* the "rejected" array's members */
};

/* One HTTP request (MHD's con_cls). */
struct request {
	enum route route;
	enum body_kind kind;
	struct conn *conn;
	const struct keel_token_entry *token; /* NULL when no token file */
	struct keel_buf body;
	size_t received;
	size_t claimed; /* bytes counted against max_buffered */
	bool too_large;
	bool suspended; /* queued, not yet back on its worker (inflight_lock) */
	struct ingest_job job;
};

/* The batch the writer thread is building: which POST each of its events
 * came from. */
struct group {
	struct ingest_job *cur;	  /* the POST whose events are being added */
	struct keel_ptrvec owner; /* per event the batch took (seq): its POST */
};

struct keel_server {
	struct keel_server_options o;
	char *store_url;
	bool shared_store; /* memory store: reads go through the writer */
	struct MHD_Daemon *daemon;
	uint16_t port;

	struct keel_cartridge *cartridge;
	bool auth;
	struct keel_tokens tokens;
	struct keel_metrics metrics;

	/* The one writer; also the memory store's reader. */
	pthread_mutex_t write_lock;
	struct keel_store *writer;

	/* Group commit: POSTs waiting for the writer thread. */
	pthread_mutex_t queue_lock;
	pthread_cond_t queue_cond;
	struct ingest_job *queue_head, **queue_tail;
	bool queue_closed; /* stopping: the writer drains the queue and exits */
	pthread_t writer_thread;
	bool writer_running;
	struct keel_ingest *ing; /* the writer thread's */
	struct group group;	 /* the batch ing is building */

	/* SQLite: WAL checkpoints off the commit path (checkpoint.c). */
	struct keel_checkpointer *checkpointer;

	/* Idle read handles (SQL stores). */
	pthread_mutex_t readers_lock;
	struct keel_ptrvec readers;

	/* Connections, for the watchdog thread. */
	pthread_mutex_t conns_lock;
	struct conn *conns;
	pthread_t watchdog;
	bool watchdog_running;
	pthread_cond_t watchdog_cond;
	bool watchdog_stop;

	/* Requests under way, for a graceful stop. */
	pthread_mutex_t inflight_lock;
	pthread_cond_t inflight_cond;
	unsigned inflight;
	unsigned suspended; /* connections queued for the writer */
	atomic_bool stopping;

	/* Request bodies held in memory, all requests together. */
	atomic_size_t buffered;
};

/* ------------------------------------------------------------- helpers */

static int64_t mono_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void server_log(struct keel_server *srv, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void server_log(struct keel_server *srv, const char *fmt, ...)
{
	if (!srv->o.log)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("keel serve: ", srv->o.log);
	vfprintf(srv->o.log, fmt, ap);
	fputc('\n', srv->o.log);
	fflush(srv->o.log);
	va_end(ap);
}

/* Appends s as a JSON string. Invalid UTF-8 becomes U+FFFD so that an
 * answer quoting bad input is still valid JSON. */
static void add_json_text(struct keel_buf *b, const char *s, size_t len)
{
	keel_buf_addc(b, '"');
	size_t i = 0;
	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			keel_buf_addc(b, '\\');
			keel_buf_addc(b, (char)c);
			i++;
		} else if (c < 0x20) {
			keel_buf_addf(b, "\\u%04x", c);
			i++;
		} else if (c < 0x80) {
			keel_buf_addc(b, (char)c);
			i++;
		} else {
			/* Length of a well-formed sequence starting here, or 0. */
			size_t n = 0;
			unsigned char c1 = i + 1 < len ? (unsigned char)s[i + 1] : 0;
			bool cont1 = (c1 & 0xC0) == 0x80;
			if (c >= 0xC2 && c <= 0xDF && cont1)
				n = 2;
			else if (c >= 0xE0 && c <= 0xEF && cont1 && i + 2 < len &&
				 ((unsigned char)s[i + 2] & 0xC0) == 0x80 &&
				 !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 > 0x9F))
				n = 3;
			else if (c >= 0xF0 && c <= 0xF4 && cont1 && i + 3 < len &&
				 ((unsigned char)s[i + 2] & 0xC0) == 0x80 &&
				 ((unsigned char)s[i + 3] & 0xC0) == 0x80 &&
				 !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 > 0x8F))
				n = 4;
			if (n) {
				keel_buf_add(b, s + i, n);
				i += n;
			} else {
				keel_buf_adds(b, "\xEF\xBF\xBD");
				i++;
			}
		}
	}
	keel_buf_addc(b, '"');
}

static void add_json_cstr(struct keel_buf *b, const char *s)
{
	add_json_text(b, s, strlen(s));
}

/* Queues an answer; takes the body (malloc'd or NULL). allow: for a 405,
 * the methods the path does take (the Allow header), else NULL. */
static enum MHD_Result answer_allow(struct keel_server *srv, struct MHD_Connection *c,
				    unsigned status, char *body, size_t len,
				    const char *content_type, const char *allow)
{
	static char empty[1];
	struct MHD_Response *r = MHD_create_response_from_buffer(
		len, body ? body : empty, body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"keel\"");
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	/* While stopping, keep-alive connections are told to go away. */
	if (atomic_load(&srv->stopping))
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	keel_metrics_status(&srv->metrics, status);
	return ret;
}

static enum MHD_Result answer(struct keel_server *srv, struct MHD_Connection *c,
			      unsigned status, char *body, size_t len,
			      const char *content_type)
{
	return answer_allow(srv, c, status, body, len, content_type, NULL);
}

static enum MHD_Result answer_json(struct keel_server *srv, struct MHD_Connection *c,
				   unsigned status, struct keel_buf *b)
{
	keel_buf_addc(b, '\n');
	char *data = b->data;
	size_t len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return answer(srv, c, status, data, len, "application/json");
}

/* 200 with a constant JSON text. */
static enum MHD_Result answer_const(struct keel_server *srv, struct MHD_Connection *c,
				    const char *json)
{
	return answer(srv, c, MHD_HTTP_OK, keel_xstrdup(json), strlen(json),
		      "application/json");
}

/* {"error":"..."} with a printf-style message. */
static enum MHD_Result answer_error(struct keel_server *srv, struct MHD_Connection *c,
				    unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static enum MHD_Result answer_error(struct keel_server *srv, struct MHD_Connection *c,
				    unsigned status, const char *fmt, ...)
{
	struct keel_buf msg, b;
	keel_buf_init(&msg);
	keel_buf_init(&b);
	va_list ap;
	va_start(ap, fmt);
	keel_buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	keel_buf_adds(&b, "{\"error\":");
	add_json_text(&b, msg.data ? msg.data : "", msg.len);
	keel_buf_addc(&b, '}');
	keel_buf_free(&msg);
	return answer_json(srv, c, status, &b);
}

/* 405 on a known path, with the methods it takes in Allow (RFC 9110). */
static enum MHD_Result answer_not_allowed(struct keel_server *srv,
					  struct MHD_Connection *c, const char *method,
					  const char *allow)
{
	struct keel_buf msg, b;
	keel_buf_init(&msg);
	keel_buf_init(&b);
	keel_buf_addf(&msg, "method %s: not allowed here", method);
	keel_buf_adds(&b, "{\"error\":");
	add_json_text(&b, msg.data, msg.len);
	keel_buf_adds(&b, "}\n");
	keel_buf_free(&msg);
	return answer_allow(srv, c, MHD_HTTP_METHOD_NOT_ALLOWED, b.data, b.len,
			    "application/json", allow);
}

/* Decodes %XX escapes of s[0..len) into out. Fails on a bad escape or an
 * escaped NUL (names are C strings further down). */
static bool percent_decode(const char *s, size_t len, struct keel_buf *out)
{
	keel_buf_reset(out);
	keel_buf_reserve(out, len);
	for (size_t i = 0; i < len; i++) {
		if (s[i] != '%') {
			keel_buf_addc(out, s[i]);
			continue;
		}
		if (i + 2 >= len)
			return false;
		int hi = keel_hex_digit(s[i + 1]), lo = keel_hex_digit(s[i + 2]);
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
			return false;
		keel_buf_addc(out, (char)(hi << 4 | lo));
		i += 2;
	}
	if (!out->data)
		keel_buf_adds(out, "");
	return true;
}

/* ------------------------------------------------------------- stores */

static struct keel_store *reader_get(struct keel_server *srv, char **err)
{
	if (srv->shared_store) {
		pthread_mutex_lock(&srv->write_lock);
		return srv->writer;
	}
	struct keel_store *s = NULL;
	pthread_mutex_lock(&srv->readers_lock);
	if (srv->readers.len)
		s = srv->readers.items[--srv->readers.len];
	pthread_mutex_unlock(&srv->readers_lock);
	if (!s && keel_store_open(srv->store_url, &s, err) != 0)
		return NULL;
	return s;
}

static void reader_put(struct keel_server *srv, struct keel_store *s)
{
	if (srv->shared_store) {
		pthread_mutex_unlock(&srv->write_lock);
		return;
	}
	pthread_mutex_lock(&srv->readers_lock);
	keel_ptrvec_push(&srv->readers, s);
	pthread_mutex_unlock(&srv->readers_lock);
}

/* ------------------------------------------------------------ watchdog */

/* libmicrohttpd's timeout is an idle timeout: a client sending a byte
 * every few seconds keeps a connection forever. The watchdog gives each
 * connection a deadline instead (headers within header_timeout of
 * connecting or of the previous answer; a whole request within
 * request_timeout) and shuts down the sockets of those past it. MHD then
 * sees the connection fail and closes it on its own thread. The list lock
 * is also taken when MHD reports a connection closed, which happens before
 * MHD closes the descriptor, so a descriptor shut down here is never one
 * the kernel has given to a newer connection. */
static void *watchdog_main(void *arg)
{
	struct keel_server *srv = arg;
	pthread_mutex_lock(&srv->conns_lock);
	while (!srv->watchdog_stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += WATCHDOG_TICK_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&srv->watchdog_cond, &srv->conns_lock, &ts);
		int64_t now = mono_usec();
		for (struct conn *c = srv->conns; c; c = c->next) {
			if (c->cut || atomic_load(&c->deadline) > now)
				continue;
			c->cut = true;
			shutdown(c->fd, SHUT_RDWR);
			atomic_fetch_add(&srv->metrics.timeouts, 1);
		}
	}
	pthread_mutex_unlock(&srv->conns_lock);
	return NULL;
}

static void set_deadline(struct conn *c, int64_t usec_from_now)
{
	if (c)
		atomic_store(&c->deadline, usec_from_now == INT64_MAX
						   ? INT64_MAX
						   : mono_usec() + usec_from_now);
}

static void on_connection(void *cls, struct MHD_Connection *connection,
			  void **socket_context, enum MHD_ConnectionNotificationCode toe)
{
	struct keel_server *srv = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		struct conn *c = keel_xcalloc(1, sizeof *c);
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
		c->fd = ci ? ci->connect_fd : -1;
		atomic_init(&c->deadline,
			    mono_usec() + (int64_t)srv->o.header_timeout * 1000000);
		pthread_mutex_lock(&srv->conns_lock);
		c->next = srv->conns;
		if (srv->conns)
			srv->conns->prev = c;
		srv->conns = c;
		pthread_mutex_unlock(&srv->conns_lock);
		*socket_context = c;
		atomic_fetch_add(&srv->metrics.open_connections, 1);
		atomic_fetch_add(&srv->metrics.connections_total, 1);
		return;
	}
	struct conn *c = *socket_context;
	if (!c)
		return;
	pthread_mutex_lock(&srv->conns_lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&srv->conns_lock);
	free(c);
	*socket_context = NULL;
	atomic_fetch_sub(&srv->metrics.open_connections, 1);
}

static void on_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	(void)connection;
	(void)toe;
	struct keel_server *srv = cls;
	struct request *rq = *con_cls;
	if (!rq)
		return;
	set_deadline(rq->conn, (int64_t)srv->o.header_timeout * 1000000);
	atomic_fetch_sub(&srv->buffered, rq->claimed);
	keel_buf_free(&rq->body);
	free(rq->job.items);
	keel_buf_free(&rq->job.rejects);
	pthread_mutex_lock(&srv->inflight_lock);
	/* Resumed, but closed before its answer could be queued. */
	if (rq->suspended)
		srv->suspended--;
	if (--srv->inflight == 0 || !srv->suspended)
		pthread_cond_broadcast(&srv->inflight_cond);
	pthread_mutex_unlock(&srv->inflight_lock);
	free(rq);
	*con_cls = NULL;
}

/* Keeps the URL and arguments as sent: the router splits the path on '/'
 * before decoding, so a subject may contain an escaped slash (%2F). */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return strlen(s);
}

/* libmicrohttpd hands its own format strings to this logger. */
__attribute__((format(printf, 2, 0)))
static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
	struct keel_server *srv = cls;
	if (!srv->o.log)
		return;
	fputs("keel serve: libmicrohttpd: ", srv->o.log);
	vfprintf(srv->o.log, fmt, ap);
	fflush(srv->o.log);
}

/* -------------------------------------------------------------- ingest */

/* Rejects come during keel_ingest_add, so they belong to the POST being
 * added; positions are that POST's own indexes. */
static void on_reject(void *ud, uint64_t position, const char *id, const char *message,
		      const char *input, size_t input_len)
{
	(void)input;
	(void)input_len;
	struct group *g = ud;
	struct ingest_job *job = g->cur;
	struct keel_buf *b = &job->rejects;
	if (job->rejected++)
		keel_buf_addc(b, ',');
	keel_buf_addf(b, "{\"index\":%llu,\"id\":", (unsigned long long)position);
	if (id)
		add_json_cstr(b, id);
	else
		keel_buf_adds(b, "null");
	keel_buf_adds(b, ",\"error\":");
	add_json_cstr(b, message);
	keel_buf_addc(b, '}');
}

/* Outcomes come after the commit, in the order the events were added;
 * seq finds the POST (positions repeat from one POST to the next). */
static void on_outcome(void *ud, uint64_t position, size_t seq,
		       enum keel_ingest_outcome o)
{
	(void)position;
	struct group *g = ud;
	struct ingest_job *job = g->owner.items[seq];
	switch (o) {
	case KEEL_INGEST_UNHANDLED:
		job->unhandled++;
		__attribute__((fallthrough)); /* unhandled events are accepted */
	case KEEL_INGEST_ACCEPTED:
		job->accepted++;
		break;
	case KEEL_INGEST_CONFLICTING:
		job->conflicting++;
		__attribute__((fallthrough)); /* and counted as duplicates */
	case KEEL_INGEST_DUPLICATE:
		job->duplicates++;
		break;
	}
}

/* Ingests the POSTs of jobs as one batch, one transaction, and fills in
 * each one's outcome. A store error rolls the whole batch back and fails
 * every POST of it alike: nothing of any was written, so each may be sent
 * again. */
static void ingest_group(struct keel_server *srv, struct group *g,
			 struct ingest_job *jobs)
{
	struct keel_ingest *ing = srv->ing;
	size_t njobs = 0, nevents = 0;
	g->owner.len = 0;
	pthread_mutex_lock(&srv->write_lock);
	int64_t t0 = mono_usec();
	int rc = 0;
	for (struct ingest_job *job = jobs; job && rc == 0; job = job->next) {
		g->cur = job;
		njobs++;
		for (size_t i = 0; rc == 0 && i < job->nitems; i++) {
			/* An event over max_line is rejected by the ingester. */
			const struct keel_http_item *it = &job->items[i];
			size_t before = keel_ingest_pending(ing);
			const char *text = job->base + it->off;
			rc = keel_ingest_add(ing, text, it->len, it->index);
			if (keel_ingest_pending(ing) > before)
				keel_ptrvec_push(&g->owner, job);
		}
		nevents += job->nitems;
	}
	if (rc == 0)
		rc = keel_ingest_flush(ing);
	char *err = rc != 0 ? keel_xstrdup(keel_ingest_errmsg(ing)) : NULL;
	int64_t t1 = mono_usec();
	pthread_mutex_unlock(&srv->write_lock);

	struct keel_metrics *m = &srv->metrics;
	keel_metrics_batch(m, (uint64_t)(t1 - t0), njobs);
	if (rc != 0) {
		atomic_fetch_add(&m->store_errors, 1);
		server_log(srv, "batch of %zu requests (%zu events) failed: %s", njobs,
			   nevents, err && *err ? err : keel_strerror(rc));
	}
	free(err);
	for (struct ingest_job *job = jobs; job; job = job->next) {
		job->rc = rc;
		if (rc != 0)
			continue;
		atomic_fetch_add(&m->events[KEEL_OUTCOME_ACCEPTED],
				 job->accepted - job->unhandled);
		atomic_fetch_add(&m->events[KEEL_OUTCOME_UNHANDLED], job->unhandled);
		atomic_fetch_add(&m->events[KEEL_OUTCOME_DUPLICATE],
				 job->duplicates - job->conflicting);
		atomic_fetch_add(&m->events[KEEL_OUTCOME_CONFLICTING], job->conflicting);
		atomic_fetch_add(&m->events[KEEL_OUTCOME_REJECTED], job->rejected);
	}
}

/* The writer thread: takes every POST queued while it was busy (up to
 * GROUP_MAX_EVENTS events), ingests them as one batch and resumes their
 * connections. It waits for nothing else: a lone POST is a batch at once,
 * and under load batches grow by themselves. After the queue is closed it
 * drains what is left, so no connection stays suspended. */
static void *writer_main(void *arg)
{
	struct keel_server *srv = arg;
	pthread_mutex_lock(&srv->queue_lock);
	for (;;) {
		while (!srv->queue_head && !srv->queue_closed)
			pthread_cond_wait(&srv->queue_cond, &srv->queue_lock);
		if (!srv->queue_head)
			break;
		struct ingest_job *jobs = srv->queue_head, *last = jobs;
		size_t events = jobs->nitems;
		while (last->next && events < GROUP_MAX_EVENTS) {
			last = last->next;
			events += last->nitems;
		}
		srv->queue_head = last->next;
		if (!srv->queue_head)
			srv->queue_tail = &srv->queue_head;
		last->next = NULL;
		pthread_mutex_unlock(&srv->queue_lock);

		ingest_group(srv, &srv->group, jobs);
		int64_t njobs = 0;
		for (struct ingest_job *job = jobs; job; job = job->next)
			njobs++;
		atomic_fetch_sub(&srv->metrics.writer_requests, njobs);
		/* Once resumed, a job belongs to its worker again (which may
		 * answer and free it at once): next is read first. */
		for (struct ingest_job *job = jobs, *next; job; job = next) {
			next = job->next;
			MHD_resume_connection(job->connection);
		}
		pthread_mutex_lock(&srv->queue_lock);
	}
	pthread_mutex_unlock(&srv->queue_lock);
	return NULL;
}

/* Queues rq's events for the writer and suspends its connection. False
 * when the server is stopping and the writer takes no more. */
static bool enqueue(struct keel_server *srv, struct MHD_Connection *c, struct request *rq)
{
	struct ingest_job *job = &rq->job;
	job->connection = c;
	job->next = NULL;
	pthread_mutex_lock(&srv->queue_lock);
	if (srv->queue_closed) {
		pthread_mutex_unlock(&srv->queue_lock);
		return false;
	}
	pthread_mutex_lock(&srv->inflight_lock);
	rq->suspended = true;
	srv->suspended++;
	pthread_mutex_unlock(&srv->inflight_lock);
	/* Suspended before the writer can see it, so that the resume never
	 * comes first. */
	MHD_suspend_connection(c);
	*srv->queue_tail = job;
	srv->queue_tail = &job->next;
	atomic_fetch_add(&srv->metrics.writer_requests, 1);
	pthread_cond_signal(&srv->queue_cond);
	pthread_mutex_unlock(&srv->queue_lock);
	return true;
}

/* The answer of a POST the writer has done with (SPEC 10). */
static enum MHD_Result answer_events(struct keel_server *srv, struct MHD_Connection *c,
				     struct request *rq)
{
	struct ingest_job *job = &rq->job;
	pthread_mutex_lock(&srv->inflight_lock);
	rq->suspended = false;
	if (--srv->suspended == 0)
		pthread_cond_broadcast(&srv->inflight_cond);
	pthread_mutex_unlock(&srv->inflight_lock);
	set_deadline(rq->conn, (int64_t)srv->o.request_timeout * 1000000);
	rq->route = ROUTE_DONE;
	if (job->rc != 0) {
		/* The cause (paths, SQL errors) went to the log, not to
		 * clients of every tenant. */
		return answer_error(srv, c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				    "store error (details in the server log); the batch was "
				    "rolled back, nothing was ingested, sending it again is safe");
	}
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_addf(&b,
		      "{\"events\":%zu,\"accepted\":%llu,\"duplicates\":%llu,\"conflicting\":%llu,"
		      "\"unhandled\":%llu,\"rejected\":[",
		      job->nitems, (unsigned long long)job->accepted,
		      (unsigned long long)job->duplicates, (unsigned long long)job->conflicting,
		      (unsigned long long)job->unhandled);
	if (job->rejects.len)
		keel_buf_add(&b, job->rejects.data, job->rejects.len);
	keel_buf_adds(&b, "]}");
	/* One event that did not go in is a failed request; a batch is
	 * answered 200 and lists what it rejected. */
	unsigned status = rq->kind == BODY_SINGLE && job->rejected
				  ? MHD_HTTP_UNPROCESSABLE_CONTENT
				  : MHD_HTTP_OK;
	return answer_json(srv, c, status, &b);
}


/* Checks the tenant of a parsed event against the token's scope. An event
 * without a string tenant is left to the envelope rules to reject. */
static bool tenant_allowed(const struct keel_token_entry *tok, const struct keel_json *ev,
			   const char **tenant, size_t *tenant_len)
{
	if (!tok || tok->all || !ev || ev->type != KEEL_JSON_OBJECT)
		return true;
	const struct keel_json *t = keel_json_get(ev, "tenant", 6);
	if (!t || t->type != KEEL_JSON_STRING)
		return true;
	*tenant = t->str;
	*tenant_len = t->len;
	return keel_token_allows(tok, t->str, t->len);
}

static enum MHD_Result forbidden_tenant(struct keel_server *srv, struct MHD_Connection *c,
					uint64_t index, const char *t, size_t tlen)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_addf(&b, "{\"error\":");
	struct keel_buf msg;
	keel_buf_init(&msg);
	keel_buf_addf(&msg, "index %llu: tenant \"", (unsigned long long)index);
	keel_buf_add(&msg, t, tlen);
	keel_buf_adds(&msg, "\": not in the token's scope; nothing was ingested");
	add_json_text(&b, msg.data, msg.len);
	keel_buf_free(&msg);
	keel_buf_addc(&b, '}');
	return answer_json(srv, c, MHD_HTTP_FORBIDDEN, &b);
}

static bool is_blank_line(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			return false;
	return true;
}

/* Splits the body into events (checking JSON-ness and tenants), then
 * queues them for the writer (answered when it resumes the connection). */
static enum MHD_Result handle_events(struct keel_server *srv, struct MHD_Connection *c,
				     struct request *rq)
{
	const char *body = rq->body.data ? rq->body.data : "";
	size_t blen = rq->body.len;
	if (is_blank_line(body, blen) && !memchr(body, '\n', blen))
		return answer_error(srv, c, MHD_HTTP_BAD_REQUEST, "empty body");

	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	struct keel_json_error jerr;
	struct keel_http_item *items = NULL;
	size_t nitems = 0, cap = 0;
	enum MHD_Result ret = MHD_YES;
	const char *tenant = NULL;
	size_t tenant_len = 0;
	const size_t max_line = srv->o.max_line;

#define PUSH_ITEM(o_, l_, i_)                                                \
	do {                                                                      \
		if (nitems == cap) {                                              \
			cap = cap ? cap * 2 : 64;                                 \
			items = keel_xrealloc(items, cap * sizeof *items);        \
		}                                                                 \
		items[nitems++] = (struct keel_http_item){(o_), (l_), (i_)};                 \
	} while (0)

	switch (rq->kind) {
	case BODY_SINGLE:
		if (keel_json_parse(&doc, body, blen, &jerr) != 0) {
			ret = answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
					   "body: invalid JSON at byte %zu: %s", jerr.offset,
					   jerr.msg);
			goto out;
		}
		if (!tenant_allowed(rq->token, doc.root, &tenant, &tenant_len)) {
			ret = forbidden_tenant(srv, c, 0, tenant, tenant_len);
			goto out;
		}
		/* The ingester compacts and validates it again; the text is
		 * handed over as received. */
		PUSH_ITEM(0, blen, 0);
		break;
	case BODY_BATCH: {
		/* The array is split, not parsed: each element is parsed once,
		 * by the ingester, which rejects a bad one alone. */
		size_t at = 0;
		const char *why = NULL;
		if (keel_http_split_array(body, blen, &items, &nitems, &cap, &why, &at) != 0) {
			ret = answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
					   "body: not a JSON array of events at byte %zu: %s", at,
					   why);
			goto out;
		}
		for (size_t i = 0; rq->token && !rq->token->all && i < nitems; i++) {
			const struct keel_http_item *it = &items[i];
			if (keel_json_parse(&doc, body + it->off, it->len, &jerr) == 0 &&
			    !tenant_allowed(rq->token, doc.root, &tenant, &tenant_len)) {
				ret = forbidden_tenant(srv, c, i, tenant, tenant_len);
				goto out;
			}
		}
		break;
	}
	case BODY_NDJSON: {
		uint64_t lineno = 0;
		bool first = true;
		for (size_t p = 0; p < blen; lineno++) {
			const char *nl = memchr(body + p, '\n', blen - p);
			size_t end = nl ? (size_t)(nl - body) : blen;
			size_t len = end - p;
			if (len && body[p + len - 1] == '\r')
				len--;
			if (!is_blank_line(body + p, len)) {
				/* The first event tells whether this is NDJSON at
				 * all; scoped tokens need every tenant. */
				bool need_parse = first || (rq->token && !rq->token->all);
				if (need_parse && len <= max_line) {
					int prc = keel_json_parse(&doc, body + p, len, &jerr);
					if (prc != 0 && first) {
						ret = answer_error(
							srv, c, MHD_HTTP_BAD_REQUEST,
							"body: first event (index %llu): not "
							"JSON at byte %zu: %s",
							(unsigned long long)lineno, jerr.offset,
							jerr.msg);
						goto out;
					}
					if (prc == 0 && !tenant_allowed(rq->token, doc.root,
									&tenant, &tenant_len)) {
						ret = forbidden_tenant(srv, c, lineno, tenant,
								       tenant_len);
						goto out;
					}
				}
				first = false;
				PUSH_ITEM(p, len, lineno);
			}
			p = nl ? end + 1 : blen;
		}
		if (first) {
			ret = answer_error(srv, c, MHD_HTTP_BAD_REQUEST, "empty body");
			goto out;
		}
		break;
	}
	}
#undef PUSH_ITEM

	/* Handed to the writer; the body stays in rq until it is answered. */
	rq->job.base = body;
	rq->job.items = items;
	rq->job.nitems = nitems;
	items = NULL;
	/* The connection must not be cut while the server works on it. */
	set_deadline(rq->conn, INT64_MAX);
	rq->route = ROUTE_EVENTS_QUEUED;
	if (!enqueue(srv, c, rq)) {
		rq->route = ROUTE_DONE;
		ret = answer_error(srv, c, MHD_HTTP_SERVICE_UNAVAILABLE,
				   "server stopping: nothing was ingested; send it again later");
	}
out:
	free(items);
	keel_json_doc_free(&doc);
	return ret;
}

/* --------------------------------------------------------------- reads */

enum read_kind {
	READ_SHOW,
	READ_HISTORY,
	READ_WHY,
	READ_STATS,
};

/* A query argument, percent-decoded into out; false when absent. */
static bool get_arg(struct MHD_Connection *c, const char *key, struct keel_buf *out,
		    bool *bad)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
	if (!v)
		return false;
	if (!percent_decode(v, strlen(v), out))
		*bad = true;
	return true;
}

/* Parses ?at=. MHD has turned '+' into ' ' (form encoding); an offset
 * such as +02:00 sent unescaped is restored rather than refused. */
static bool parse_at(const char *s, int64_t *out, const char **why)
{
	if (keel_time_parse(s, strlen(s), out, why) == 0)
		return true;
	char *copy = keel_xstrdup(s);
	for (char *p = copy; *p; p++)
		if (*p == ' ')
			*p = '+';
	bool ok = keel_time_parse(copy, strlen(copy), out, NULL) == 0;
	free(copy);
	return ok;
}

static enum MHD_Result handle_read(struct keel_server *srv, struct MHD_Connection *c,
				   enum read_kind kind, const char *tenant,
				   const char *subject)
{
	struct keel_buf predicate, at_text;
	keel_buf_init(&predicate);
	keel_buf_init(&at_text);
	bool bad = false;
	bool has_pred = get_arg(c, "predicate", &predicate, &bad);
	bool has_at = get_arg(c, "at", &at_text, &bad);
	enum MHD_Result ret;
	int64_t at = 0;
	if (bad) {
		ret = answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
				   "query: invalid percent-escape");
		goto out;
	}
	const char *why = NULL;
	if (has_at && !parse_at(at_text.data, &at, &why)) {
		ret = answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
				   "parameter \"at\": %s", why ? why : "not an RFC 3339 timestamp");
		goto out;
	}
	if (!has_at)
		at = keel_time_now();
	if (kind == READ_WHY && (!has_pred || predicate.len == 0)) {
		ret = answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
				   "parameter \"predicate\": required");
		goto out;
	}
	char *err = NULL;
	struct keel_store *s = reader_get(srv, &err);
	if (!s) {
		atomic_fetch_add(&srv->metrics.store_errors, 1);
		server_log(srv, "read failed: %s", err ? err : "cannot open the store");
		ret = answer_error(srv, c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				   "store error (details in the server log)");
		free(err);
		goto out;
	}
	char *json = NULL;
	int rc;
	switch (kind) {
	case READ_SHOW:
		rc = keel_show(s, tenant, subject, at, &json);
		break;
	case READ_HISTORY:
		rc = keel_history(s, tenant, subject,
				  has_pred && predicate.len ? predicate.data : NULL, &json);
		break;
	case READ_WHY:
		rc = keel_why(s, tenant, subject, predicate.data, at, &json);
		break;
	default:
		rc = keel_stats(s, tenant, &json);
		break;
	}
	char *msg = rc != 0 ? keel_xstrdup(keel_store_errmsg(s)) : NULL;
	reader_put(srv, s);
	if (rc == KEEL_ENOTFOUND) {
		free(json);
		ret = answer_error(srv, c, MHD_HTTP_NOT_FOUND, "%s",
				   msg && *msg ? msg : "not found");
	} else if (rc == KEEL_EINVAL) {
		free(json);
		ret = answer_error(srv, c, MHD_HTTP_BAD_REQUEST, "%s",
				   msg && *msg ? msg : keel_strerror(rc));
	} else if (rc != 0) {
		free(json);
		atomic_fetch_add(&srv->metrics.store_errors, 1);
		server_log(srv, "read failed: %s", msg && *msg ? msg : keel_strerror(rc));
		ret = answer_error(srv, c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				   "store error (details in the server log)");
	} else {
		size_t len = strlen(json);
		/* A trailing newline, as on the command line. */
		char *body = keel_xrealloc(json, len + 2);
		body[len] = '\n';
		body[len + 1] = 0;
		ret = answer(srv, c, MHD_HTTP_OK, body, len + 1, "application/json");
	}
	free(msg);
out:
	keel_buf_free(&predicate);
	keel_buf_free(&at_text);
	return ret;
}

/* ------------------------------------------------------------- routing */

/* Splits url into at most max '/'-separated segments after the leading
 * '/'. Returns the count, or max + 1 when there are more. */
static size_t split_path(const char *url, const char **seg, size_t *seglen, size_t max)
{
	if (*url != '/')
		return max + 1;
	size_t n = 0;
	const char *p = url + 1;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		if (n == max)
			return max + 1;
		seg[n] = p;
		seglen[n] = len;
		n++;
		if (!slash)
			return n;
		p = slash + 1;
	}
}

static bool seg_is(const char *s, size_t len, const char *want)
{
	return strlen(want) == len && memcmp(s, want, len) == 0;
}

/* Authenticates the request. Returns true with *tok set (NULL when the
 * server has no tokens), or false after queueing a 401. */
static bool authenticate(struct keel_server *srv, struct MHD_Connection *c,
			 const struct keel_token_entry **tok, enum MHD_Result *ret)
{
	*tok = NULL;
	if (!srv->auth)
		return true;
	const char *h =
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!h || strncasecmp(h, "Bearer ", 7) != 0) {
		*ret = answer_error(srv, c, MHD_HTTP_UNAUTHORIZED,
				    "missing bearer token (Authorization: Bearer TOKEN)");
		return false;
	}
	h += 7;
	while (*h == ' ')
		h++;
	size_t len = strlen(h);
	while (len && h[len - 1] == ' ')
		len--;
	*tok = keel_tokens_find(&srv->tokens, h, len);
	if (!*tok) {
		*ret = answer_error(srv, c, MHD_HTTP_UNAUTHORIZED, "invalid token");
		return false;
	}
	return true;
}

static bool parse_size(const char *s, uint64_t *out)
{
	if (!s || !*s)
		return false;
	uint64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

/* Counts n more bytes of rq's body against the memory all bodies may
 * hold at once, so that many large uploads together cannot exhaust memory
 * where one alone could not. False (nothing counted) when over. */
static bool claim(struct keel_server *srv, struct request *rq, size_t n)
{
	size_t before = atomic_fetch_add(&srv->buffered, n);
	if (before + n > srv->o.max_buffered) {
		atomic_fetch_sub(&srv->buffered, n);
		return false;
	}
	rq->claimed += n;
	return true;
}

/* First call for POST /v1/events: everything that can be refused before
 * the body is read. */
static enum MHD_Result start_events(struct keel_server *srv, struct MHD_Connection *c,
				    struct request *rq)
{
	const char *ct =
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	size_t mlen = 0;
	if (ct) {
		while (ct[mlen] && ct[mlen] != ';' && ct[mlen] != ' ')
			mlen++;
	}
	if (ct && mlen == 28 && strncasecmp(ct, "application/cloudevents+json", mlen) == 0)
		rq->kind = BODY_SINGLE;
	else if (ct && mlen == 34 &&
		 strncasecmp(ct, "application/cloudevents-batch+json", mlen) == 0)
		rq->kind = BODY_BATCH;
	else if (ct && ((mlen == 20 && strncasecmp(ct, "application/x-ndjson", mlen) == 0) ||
			(mlen == 18 && strncasecmp(ct, "application/ndjson", mlen) == 0)))
		rq->kind = BODY_NDJSON;
	else {
		rq->route = ROUTE_DONE;
		return answer_error(srv, c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
				    "content type \"%.*s\": expected application/cloudevents+json, "
				    "application/cloudevents-batch+json or application/x-ndjson",
				    (int)(mlen > 100 ? 100 : mlen), ct ? ct : "");
	}
	const char *cl =
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	uint64_t n;
	if (cl && parse_size(cl, &n) && n > srv->o.max_body) {
		rq->route = ROUTE_DONE;
		return answer_error(srv, c, MHD_HTTP_CONTENT_TOO_LARGE,
				    "body of %llu bytes: larger than the maximum of %zu bytes",
				    (unsigned long long)n, srv->o.max_body);
	}
	if (cl && parse_size(cl, &n)) {
		if (!claim(srv, rq, (size_t)n)) {
			rq->route = ROUTE_DONE;
			return answer_error(srv, c, MHD_HTTP_SERVICE_UNAVAILABLE,
					    "server busy: request bodies in memory at their limit; "
					    "retry later");
		}
		keel_buf_reserve(&rq->body, (size_t)n);
	}
	return MHD_YES;
}

/* Whether url is one of the read endpoints (its segments in seg, len,
 * *n, still percent-encoded), and which. */
static bool read_route(const char *url, const char **seg, size_t *len, size_t *n,
		       enum read_kind *kind)
{
	*n = split_path(url, seg, len, 6);
	if (*n < 4 || *n > 6 || !seg_is(seg[0], len[0], "v1") ||
	    !seg_is(seg[1], len[1], "tenants"))
		return false;
	if (*n == 4 && seg_is(seg[3], len[3], "stats")) {
		*kind = READ_STATS;
		return true;
	}
	if (*n < 5 || !seg_is(seg[3], len[3], "entities") || len[4] == 0)
		return false;
	if (*n == 5)
		*kind = READ_SHOW;
	else if (seg_is(seg[5], len[5], "history"))
		*kind = READ_HISTORY;
	else if (seg_is(seg[5], len[5], "why"))
		*kind = READ_WHY;
	else
		return false;
	return true;
}

static enum MHD_Result route_get(struct keel_server *srv, struct MHD_Connection *c,
				 const char *url, const struct keel_token_entry *tok)
{
	const char *seg[7];
	size_t len[7], n;
	enum read_kind kind;
	if (!read_route(url, seg, len, &n, &kind))
		return answer_error(srv, c, MHD_HTTP_NOT_FOUND, "no such endpoint");
	struct keel_buf tenant, subject;
	keel_buf_init(&tenant);
	keel_buf_init(&subject);
	enum MHD_Result ret;
	if (!percent_decode(seg[2], len[2], &tenant) ||
	    (n >= 5 && !percent_decode(seg[4], len[4], &subject))) {
		ret = answer_error(srv, c, MHD_HTTP_BAD_REQUEST, "path: invalid percent-escape");
		goto out;
	}
	/* Scope first: a token learns nothing about tenants it may not see,
	 * not even whether their names are valid. */
	if (tok && !keel_token_allows(tok, tenant.data, tenant.len)) {
		struct keel_buf b;
		keel_buf_init(&b);
		keel_buf_adds(&b, "{\"error\":");
		struct keel_buf msg;
		keel_buf_init(&msg);
		keel_buf_adds(&msg, "tenant \"");
		keel_buf_add(&msg, tenant.data, tenant.len);
		keel_buf_adds(&msg, "\": not in the token's scope");
		add_json_text(&b, msg.data, msg.len);
		keel_buf_free(&msg);
		keel_buf_addc(&b, '}');
		ret = answer_json(srv, c, MHD_HTTP_FORBIDDEN, &b);
		goto out;
	}
	if (!keel_tenant_name_ok(tenant.data, tenant.len)) {
		ret = answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
				   "tenant: not 1-64 bytes of [A-Za-z0-9._-]");
		goto out;
	}
	ret = handle_read(srv, c, kind, tenant.data, n >= 5 ? subject.data : NULL);
out:
	keel_buf_free(&tenant);
	keel_buf_free(&subject);
	return ret;
}

static enum MHD_Result handle_metrics(struct keel_server *srv, struct MHD_Connection *c)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_metrics_render(&srv->metrics, &b);
	if (srv->checkpointer) {
		uint64_t runs, frames;
		keel_checkpointer_stats(srv->checkpointer, &runs, &frames);
		keel_buf_addf(&b,
			      "# HELP keel_sqlite_checkpoints_total Background WAL checkpoints "
			      "that copied pages.\n"
			      "# TYPE keel_sqlite_checkpoints_total counter\n"
			      "keel_sqlite_checkpoints_total %llu\n"
			      "# HELP keel_sqlite_checkpoint_pages_total WAL pages copied back "
			      "by background checkpoints.\n"
			      "# TYPE keel_sqlite_checkpoint_pages_total counter\n"
			      "keel_sqlite_checkpoint_pages_total %llu\n",
			      (unsigned long long)runs, (unsigned long long)frames);
	}
	char *data = b.data;
	size_t len = b.len;
	return answer(srv, c, MHD_HTTP_OK, data, len, "text/plain; version=0.0.4");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	(void)version;
	struct keel_server *srv = cls;
	struct request *rq = *con_cls;

	if (!rq) {
		/* First call: headers are in, no body yet. */
		rq = keel_xcalloc(1, sizeof *rq);
		keel_buf_init(&rq->body);
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		rq->conn = ci ? ci->socket_context : NULL;
		*con_cls = rq;
		pthread_mutex_lock(&srv->inflight_lock);
		srv->inflight++;
		pthread_mutex_unlock(&srv->inflight_lock);
		set_deadline(rq->conn, (int64_t)srv->o.request_timeout * 1000000);

		bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 ||
			   strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
		bool post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
		if (strcmp(url, "/healthz") == 0) {
			rq->route = ROUTE_DONE;
			if (!get)
				return answer_not_allowed(srv, c, method, "GET, HEAD");
			return answer_const(srv, c, "{\"status\":\"ok\"}\n");
		}
		enum MHD_Result ret = MHD_YES;
		if (!authenticate(srv, c, &rq->token, &ret)) {
			rq->route = ROUTE_DONE;
			return ret;
		}
		if (strcmp(url, "/v1/events") == 0) {
			if (!post) {
				rq->route = ROUTE_DONE;
				return answer_not_allowed(srv, c, method, "POST");
			}
			rq->route = srv->o.null_mode ? ROUTE_NULL_EVENTS : ROUTE_EVENTS;
			return start_events(srv, c, rq);
		}
		if (!get) {
			rq->route = ROUTE_DONE;
			const char *seg[7];
			size_t len[7], n;
			enum read_kind kind;
			if (strcmp(url, "/metrics") == 0 ||
			    read_route(url, seg, len, &n, &kind))
				return answer_not_allowed(srv, c, method, "GET, HEAD");
			return answer_error(srv, c, MHD_HTTP_NOT_FOUND, "no such endpoint");
		}
		rq->route = ROUTE_READ;
		return MHD_YES;
	}

	if (*upload_data_size) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		if (rq->route == ROUTE_DONE || rq->route == ROUTE_READ)
			return MHD_YES; /* a body nobody asked for */
		rq->received += n;
		bool over = rq->received > srv->o.max_body;
		if (!over && rq->received > rq->claimed &&
		    !claim(srv, rq, rq->received - rq->claimed))
			over = true;
		if (over) {
			/* No Content-Length (chunked) and too much, for this
			 * request or for all together: the answer cannot be
			 * queued in the middle of a body, so the connection is
			 * closed instead of reading on. */
			if (!rq->too_large)
				keel_metrics_status(&srv->metrics, MHD_HTTP_CONTENT_TOO_LARGE);
			rq->too_large = true;
			return MHD_NO;
		}
		if (rq->route == ROUTE_EVENTS)
			keel_buf_add(&rq->body, upload_data, n);
		return MHD_YES;
	}

	/* Last call: the whole request is in. */
	switch (rq->route) {
	case ROUTE_EVENTS:
		return handle_events(srv, c, rq);
	case ROUTE_EVENTS_QUEUED:
		return answer_events(srv, c, rq);
	case ROUTE_NULL_EVENTS:
		return answer_const(srv, c,
				    "{\"events\":0,\"accepted\":0,\"duplicates\":0,"
				    "\"conflicting\":0,\"unhandled\":0,\"rejected\":[]}\n");
	case ROUTE_READ:
		rq->route = ROUTE_DONE;
		if (strcmp(url, "/metrics") == 0)
			return handle_metrics(srv, c);
		return route_get(srv, c, url, rq->token);
	case ROUTE_DONE:
		return MHD_YES;
	}
	return MHD_NO;
}

/* ------------------------------------------------------- start and stop */

static bool is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
		if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
			return true;
		return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127;
	}
	return false;
}

/* "HOST:PORT", "[V6]:PORT" or ":PORT" (all IPv4 interfaces). */
static int resolve_listen(const char *listen, struct sockaddr_storage *ss,
			  socklen_t *sslen, struct keel_buf *err)
{
	const char *colon = strrchr(listen, ':');
	if (!colon || !colon[1]) {
		keel_buf_addf(err, "listen \"%s\": expected HOST:PORT", listen);
		return KEEL_EINVAL;
	}
	char host[256];
	const char *h = listen;
	size_t hlen = (size_t)(colon - listen);
	if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
		h++;
		hlen -= 2;
	}
	if (hlen >= sizeof host) {
		keel_buf_addf(err, "listen \"%s\": host name too long", listen);
		return KEEL_EINVAL;
	}
	memcpy(host, h, hlen);
	host[hlen] = 0;
	uint64_t port;
	if (!parse_size(colon + 1, &port) || port > 65535) {
		keel_buf_addf(err, "listen \"%s\": port: not a number from 0 to 65535", listen);
		return KEEL_EINVAL;
	}
	struct addrinfo hints = {0}, *res = NULL;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	int gai = getaddrinfo(hlen ? host : "0.0.0.0", colon + 1, &hints, &res);
	if (gai != 0 || !res) {
		keel_buf_addf(err, "listen \"%s\": %s", listen, gai_strerror(gai));
		return KEEL_EINVAL;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*sslen = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* Closes the queue; the writer drains it (resuming every connection)
 * and exits. */
static void writer_stop(struct keel_server *srv)
{
	if (!srv->writer_running)
		return;
	pthread_mutex_lock(&srv->queue_lock);
	srv->queue_closed = true;
	pthread_cond_signal(&srv->queue_cond);
	pthread_mutex_unlock(&srv->queue_lock);
	pthread_join(srv->writer_thread, NULL);
	srv->writer_running = false;
}

static void server_free(struct keel_server *srv)
{
	writer_stop(srv);
	if (srv->watchdog_running) {
		pthread_mutex_lock(&srv->conns_lock);
		srv->watchdog_stop = true;
		pthread_cond_signal(&srv->watchdog_cond);
		pthread_mutex_unlock(&srv->conns_lock);
		pthread_join(srv->watchdog, NULL);
	}
	keel_checkpointer_stop(srv->checkpointer);
	for (size_t i = 0; i < srv->readers.len; i++)
		keel_store_close(srv->readers.items[i]);
	keel_ptrvec_free(&srv->readers);
	keel_ingest_free(srv->ing);
	keel_ptrvec_free(&srv->group.owner);
	keel_store_close(srv->writer);
	keel_cartridge_free(srv->cartridge);
	keel_tokens_free(&srv->tokens);
	free(srv->store_url);
	pthread_mutex_destroy(&srv->write_lock);
	pthread_mutex_destroy(&srv->queue_lock);
	pthread_cond_destroy(&srv->queue_cond);
	pthread_mutex_destroy(&srv->readers_lock);
	pthread_mutex_destroy(&srv->conns_lock);
	pthread_cond_destroy(&srv->watchdog_cond);
	pthread_mutex_destroy(&srv->inflight_lock);
	pthread_cond_destroy(&srv->inflight_cond);
	free(srv);
}

static void init_cond_monotonic(pthread_cond_t *c)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
}

int keel_server_start(const struct keel_server_options *o, struct keel_server **out,
		      char **errmsg)
{
	*out = NULL;
	if (errmsg)
		*errmsg = NULL;
	struct keel_server *srv = keel_xcalloc(1, sizeof *srv);
	srv->o = *o;
	struct keel_server_options *so = &srv->o;
	if (!so->listen)
		so->listen = DEFAULT_LISTEN;
	if (!so->cartridge)
		so->cartridge = "fleet";
	if (!so->threads)
		so->threads = DEFAULT_THREADS;
	if (!so->max_body)
		so->max_body = DEFAULT_MAX_BODY;
	if (!so->max_line)
		so->max_line = 1u << 20;
	if (!so->max_connections)
		so->max_connections = DEFAULT_MAX_CONNECTIONS;
	if (!so->max_per_ip)
		so->max_per_ip = DEFAULT_MAX_PER_IP;
	if (!so->idle_timeout)
		so->idle_timeout = DEFAULT_IDLE_TIMEOUT;
	if (!so->header_timeout)
		so->header_timeout = DEFAULT_HEADER_TIMEOUT;
	if (!so->request_timeout)
		so->request_timeout = DEFAULT_REQUEST_TIMEOUT;
	if (!so->grace)
		so->grace = DEFAULT_GRACE;
	if (!so->max_buffered)
		so->max_buffered = DEFAULT_MAX_BUFFERED;
	if (so->max_buffered < so->max_body)
		so->max_buffered = so->max_body;
	pthread_mutex_init(&srv->write_lock, NULL);
	pthread_mutex_init(&srv->queue_lock, NULL);
	pthread_cond_init(&srv->queue_cond, NULL);
	srv->queue_tail = &srv->queue_head;
	pthread_mutex_init(&srv->readers_lock, NULL);
	pthread_mutex_init(&srv->conns_lock, NULL);
	init_cond_monotonic(&srv->watchdog_cond);
	pthread_mutex_init(&srv->inflight_lock, NULL);
	init_cond_monotonic(&srv->inflight_cond);
	atomic_init(&srv->stopping, false);
	atomic_init(&srv->buffered, 0);
	keel_metrics_init(&srv->metrics);

	struct keel_buf err;
	keel_buf_init(&err);
	int rc = 0;
	char *e = NULL;

	struct sockaddr_storage ss;
	socklen_t sslen = 0;
	rc = resolve_listen(so->listen, &ss, &sslen, &err);
	if (rc)
		goto fail;
	if (so->token_file) {
		rc = keel_tokens_load(so->token_file, &srv->tokens, &err);
		if (rc)
			goto fail;
		srv->auth = true;
	} else if (!is_loopback((struct sockaddr *)&ss)) {
		keel_buf_addf(&err,
			      "listen \"%s\": without a token file the server listens on "
			      "loopback addresses only (give --tokens FILE)",
			      so->listen);
		rc = KEEL_EINVAL;
		goto fail;
	}

	const char *url = so->store_url ? so->store_url : getenv("KEEL_STORE");
	srv->store_url = keel_xstrdup(url && *url ? url : "sqlite:keel.db");
	srv->shared_store = strncmp(srv->store_url, "memory:", 7) == 0;
	rc = keel_cartridge_load(so->cartridge, &srv->cartridge, &e);
	if (rc) {
		keel_buf_adds(&err, e ? e : keel_strerror(rc));
		goto fail;
	}
	rc = keel_store_open(srv->store_url, &srv->writer, &e);
	if (rc) {
		keel_buf_adds(&err, e ? e : keel_strerror(rc));
		goto fail;
	}
	/* One ingester for the server's life: its batch is whatever the
	 * writer gathers, flushed by the writer only. */
	struct keel_ingest_options io = {
		.cartridge = srv->cartridge,
		.batch = SIZE_MAX,
		.max_line = so->max_line,
		.position_word = "index",
		.on_reject = on_reject,
		.reject_userdata = &srv->group,
		.on_outcome = on_outcome,
		.outcome_userdata = &srv->group,
	};
	rc = keel_ingest_new(srv->writer, &io, &srv->ing);
	if (rc) {
		keel_buf_adds(&err, keel_strerror(rc));
		goto fail;
	}
	if (strncmp(srv->store_url, "sqlite:", 7) == 0) {
		rc = keel_checkpointer_start(srv->store_url + 7, CHECKPOINT_INTERVAL_MS,
					     &srv->checkpointer, &err);
		if (rc)
			goto fail;
	}
	/* Read handles opened now, while nothing writes: a handle is opened
	 * later only if more requests read at once than there are workers. */
	for (unsigned i = 0; !srv->shared_store && i < so->threads; i++) {
		struct keel_store *r;
		rc = keel_store_open(srv->store_url, &r, &e);
		if (rc) {
			keel_buf_adds(&err, e ? e : keel_strerror(rc));
			goto fail;
		}
		keel_ptrvec_push(&srv->readers, r);
	}

	if (pthread_create(&srv->watchdog, NULL, watchdog_main, srv) != 0) {
		keel_buf_adds(&err, "cannot start the watchdog thread");
		rc = KEEL_EIO;
		goto fail;
	}
	srv->watchdog_running = true;
	if (pthread_create(&srv->writer_thread, NULL, writer_main, srv) != 0) {
		keel_buf_adds(&err, "cannot start the writer thread");
		rc = KEEL_EIO;
		goto fail;
	}
	srv->writer_running = true;

	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
			     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	srv->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, on_request, srv,
		/* First, so that MHD's messages about later options use it. */
		MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, srv,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
		MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)so->threads,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned int)so->max_connections,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)so->max_per_ip,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)so->idle_timeout,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
		/* No MHD_OPTION_LISTENING_ADDRESS_REUSE: set, it means
		 * SO_REUSEPORT, and a second server on a port in use would
		 * start and share its connections. libmicrohttpd's default,
		 * SO_REUSEADDR, still restarts at once past TIME_WAIT. */
		MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
		MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, srv,
		MHD_OPTION_END);
	if (!srv->daemon) {
		keel_buf_addf(&err, "listen \"%s\": cannot start the server (%s)", so->listen,
			      errno ? strerror(errno) : "libmicrohttpd refused the options");
		rc = KEEL_EIO;
		goto fail;
	}
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
	srv->port = di ? di->port : 0;
	server_log(srv, "listening on %s (port %u), store %s, %u threads%s%s", so->listen,
		   (unsigned)srv->port, srv->store_url, so->threads,
		   srv->auth ? "" : ", no tokens (loopback only)",
		   so->null_mode ? ", NULL MODE (events are not ingested)" : "");
	free(e);
	keel_buf_free(&err);
	*out = srv;
	return 0;

fail:
	if (errmsg)
		*errmsg = keel_xstrdup(err.data ? err.data : keel_strerror(rc));
	free(e);
	keel_buf_free(&err);
	server_free(srv);
	return rc ? rc : KEEL_EINVAL;
}

uint16_t keel_server_port(const struct keel_server *srv)
{
	return srv->port;
}

void keel_server_stop(struct keel_server *srv)
{
	if (!srv)
		return;
	atomic_store(&srv->stopping, true);
	/* Stop accepting; connections already open may finish what they
	 * started. */
	MHD_socket lfd = MHD_quiesce_daemon(srv->daemon);
	/* Closed now, not after the grace period: new clients are refused at
	 * once instead of waiting in the backlog for a server that is going. */
	if (lfd != MHD_INVALID_SOCKET)
		close(lfd);
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += srv->o.grace;
	pthread_mutex_lock(&srv->inflight_lock);
	while (srv->inflight > 0) {
		if (pthread_cond_timedwait(&srv->inflight_cond, &srv->inflight_lock, &until) ==
		    ETIMEDOUT)
			break;
	}
	unsigned left = srv->inflight;
	pthread_mutex_unlock(&srv->inflight_lock);
	if (left)
		server_log(srv, "grace period over: closing %u unfinished requests", left);
	/* The writer finishes the batch under way and every POST still
	 * queued (commit or rollback: nothing is ever half-written), and
	 * resumes their connections; a POST that comes later is answered 503.
	 * libmicrohttpd must not be stopped with a connection suspended, so
	 * the resumed ones are given a moment to be answered. */
	writer_stop(srv);
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += RESUME_WAIT_S;
	pthread_mutex_lock(&srv->inflight_lock);
	while (srv->suspended > 0) {
		if (pthread_cond_timedwait(&srv->inflight_cond, &srv->inflight_lock, &until) ==
		    ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&srv->inflight_lock);
	MHD_stop_daemon(srv->daemon);
	server_log(srv, "stopped");
	server_free(srv);
}

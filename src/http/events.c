/*
 * events.c - POST /v1/events: splitting and checking a body, tenant
 * scopes, and the one writer thread that ingests every queued POST as one
 * batch (group commit) and answers each with its own outcome.
 */
#include "server.h"
#include "event/json_write.h"

/* -------------------------------------------------------------- ingest */

/* Rejects come during keel_ingest_add, so they belong to the POST being
 * added; positions are that POST's own indexes. */
void keel_http_on_reject(void *ud, uint64_t position, const char *id, const char *message,
			 const char *input, size_t input_len)
{
	(void)input;
	(void)input_len;
	struct group *g = ud;
	struct ingest_job *job = g->cur;
	struct keel_buf *b = &job->rejects;
	/* Past the first ANSWER_MAX_LISTED only counted: the answer of a
	 * request of a million bad events is not a hundred megabytes. */
	if (job->rejected++ >= ANSWER_MAX_LISTED)
		return;
	if (b->len)
		keel_buf_addc(b, ',');
	keel_buf_addf(b, "{\"index\":%llu,\"id\":", (unsigned long long)position);
	if (id)
		keel_buf_add_json_str(b, keel_str_cstr(id));
	else
		keel_buf_adds(b, "null");
	keel_buf_adds(b, ",\"error\":");
	keel_buf_add_json_str(b, keel_str_cstr(message));
	keel_buf_addc(b, '}');
}

/* A conflicting duplicate in the answer: its index, source, id and why,
 * naming the first copy by its index when it came in the same POST, else
 * the logged event by its seq (docs/http.md). */
static void add_conflict(struct ingest_job *job, const struct keel_batch_event *ev)
{
	struct keel_buf *b = &job->conflicts;
	if (job->conflicts_listed++ >= ANSWER_MAX_LISTED)
		return; /* counted in conflicting all the same */
	if (b->len)
		keel_buf_addc(b, ',');
	keel_buf_addf(b, "{\"index\":%llu,\"source\":", (unsigned long long)ev->position);
	keel_buf_add_json_str(b, ev->source);
	keel_buf_adds(b, ",\"id\":");
	keel_buf_add_json_str(b, ev->id);
	keel_buf_adds(b, ",\"error\":\"conflicting duplicate: its envelope differs from ");
	if (ev->first && ev->first->owner == job)
		keel_buf_addf(b, "that of index %llu\"}",
			      (unsigned long long)ev->first->position);
	else if (ev->first)
		keel_buf_adds(b, "that of an event logged at the same time\"}");
	else
		keel_buf_addf(b, "that of the event already in the store (seq %lld)\"}",
			      (long long)ev->stored_seq);
}

/* Outcomes come after the commit, in the order the events were added;
 * each event names its POST (its owner, keel_ingest_add_owned): never a
 * place in a list, which an event left over from another batch would
 * shift. */
void keel_http_on_outcome(void *ud, uint64_t position, size_t seq,
			  enum keel_ingest_outcome o)
{
	(void)position;
	struct group *g = ud;
	const struct keel_batch_event *ev = keel_ingest_batch_event(g->ing, seq);
	struct ingest_job *job = ev->owner;
	enum keel_outcome counted = KEEL_OUTCOME_ACCEPTED;
	switch (o) {
	case KEEL_INGEST_UNHANDLED:
		job->unhandled++;
		job->accepted++; /* unhandled events are accepted */
		counted = KEEL_OUTCOME_UNHANDLED;
		break;
	case KEEL_INGEST_ACCEPTED:
		job->accepted++;
		break;
	case KEEL_INGEST_CONFLICTING:
		job->conflicting++;
		job->duplicates++; /* and counted as duplicates */
		counted = KEEL_OUTCOME_CONFLICTING;
		add_conflict(job, ev);
		break;
	case KEEL_INGEST_DUPLICATE:
		job->duplicates++;
		counted = KEEL_OUTCOME_DUPLICATE;
		break;
	}
	/* Outcomes come only after the commit, so these count what went in.
	 * Runs of one tenant look its counters up once. */
	struct keel_tenant_metrics *t = g->last;
	if (!t || t->len != ev->tenant.len || memcmp(t->name, ev->tenant.ptr, t->len) != 0)
		t = g->last = keel_metrics_tenant(g->metrics, ev->tenant.ptr, ev->tenant.len);
	atomic_fetch_add_explicit(&t->events[counted], 1, memory_order_relaxed);
	/* The POST's tenant, for the request log: names are valid by now
	 * (1-64 bytes), so they fit. */
	if (job->tenants == 0) {
		memcpy(job->tenant, t->name, t->len + 1);
		job->tenants = 1;
	} else if (job->tenants == 1 && strcmp(job->tenant, t->name) != 0) {
		job->tenants = 2;
	}
}

/* --forward: what the log made of an event, by the order the
 * publisher took it (seq, as ingest's on_outcome). */
void keel_http_on_published(void *ud, uint64_t position, size_t seq, bool duplicate)
{
	(void)position;
	struct group *g = ud;
	struct ingest_job *job = g->published_by.items[seq];
	if (duplicate)
		job->duplicates++;
	else
		job->accepted++;
}

int keel_http_forward_open(struct keel_server *srv, struct keel_buf *err)
{
	struct keel_publish_options po = {
	    .size = sizeof po,
	    .log = &srv->forward,
	    .cartridge = srv->cartridge,
	    .max_line = srv->o.max_line,
	    .position_word = "index",
	    .on_reject = keel_http_on_reject,
	    .reject_userdata = &srv->group,
	    .on_published = keel_http_on_published,
	    .published_userdata = &srv->group,
	    .max_pending = GROUP_MAX_EVENTS,
	    .log_file = srv->o.log,
	};
	char *e = NULL;
	int rc = keel_publisher_new(&po, &srv->pub, &e);
	if (rc)
		keel_buf_adds(err, e ? e : keel_strerror(rc));
	free(e);
	return rc;
}

/* --forward: publishes the POSTs of jobs to the log and fills in each
 * one's outcome once the log has acknowledged every event. A failure
 * (the log did not acknowledge in time) fails every POST of the group
 * alike; some of their events may be in the log, and sending them again
 * stores nothing twice (Nats-Msg-Id). The publisher is made again for
 * the next group. */
static void forward_group(struct keel_server *srv, struct group *g,
			  struct ingest_job *jobs)
{
	size_t njobs = 0, nevents = 0;
	g->published_by.len = 0;
	int64_t t0 = keel_http_mono_usec();
	struct keel_buf err;
	keel_buf_init(&err);
	int rc = srv->pub ? 0 : keel_http_forward_open(srv, &err);
	for (struct ingest_job *job = jobs; job && rc == 0; job = job->next) {
		g->cur = job;
		njobs++;
		for (size_t i = 0; rc == 0 && i < job->nitems; i++) {
			const struct keel_http_item *it = &job->items[i];
			uint64_t rejected = job->rejected;
			rc = keel_publisher_add(srv->pub, job->base + it->off, it->len,
						it->index);
			if (rc == 0 && job->rejected == rejected)
				keel_ptrvec_push(&g->published_by, job);
		}
		nevents += job->nitems;
	}
	if (rc == 0)
		rc = keel_publisher_flush(srv->pub);
	if (rc && srv->pub) {
		keel_buf_adds(&err, keel_publisher_errmsg(srv->pub));
		keel_publisher_free(srv->pub);
		srv->pub = NULL;
	}
	int64_t t1 = keel_http_mono_usec();
	struct keel_metrics *m = &srv->metrics;
	keel_metrics_batch(m, (uint64_t)(t1 - t0), njobs);
	if (rc) {
		atomic_fetch_add(&m->store_errors, 1);
		keel_http_log(srv, "batch of %zu requests (%zu events) not forwarded: %s",
			      njobs, nevents, err.len ? err.data : keel_strerror(rc));
	}
	keel_buf_free(&err);
	for (struct ingest_job *job = jobs; job; job = job->next) {
		job->rc = rc;
		job->forwarded = true;
		if (rc != 0)
			continue;
		atomic_fetch_add(&m->events[KEEL_OUTCOME_ACCEPTED], job->accepted);
		atomic_fetch_add(&m->events[KEEL_OUTCOME_DUPLICATE], job->duplicates);
		atomic_fetch_add(&m->events[KEEL_OUTCOME_REJECTED], job->rejected);
	}
}

/* Ingests the POSTs of jobs as one batch, one transaction, and fills in
 * each one's outcome. A store error rolls the whole batch back and fails
 * every POST of it alike: nothing of any was written (the ingester keeps
 * none of its events for a later batch, keel_ingest_add), so each may be
 * sent again. */
static void ingest_group(struct keel_server *srv, struct group *g,
			 struct ingest_job *jobs)
{
	struct keel_ingest *ing = srv->ing;
	size_t njobs = 0, nevents = 0;
	pthread_mutex_lock(&srv->write_lock);
	int64_t t0 = keel_http_mono_usec();
	int rc = 0;
	for (struct ingest_job *job = jobs; job && rc == 0; job = job->next) {
		g->cur = job;
		njobs++;
		for (size_t i = 0; rc == 0 && i < job->nitems; i++) {
			/* An event over max_line is rejected by the ingester. */
			const struct keel_http_item *it = &job->items[i];
			const char *text = job->base + it->off;
			rc = keel_ingest_add_owned(ing, text, it->len, it->index, job);
			/* A tenant with no cartridge here: that event is
			 * rejected (on_reject listed it), the rest go on. */
			if (rc == KEEL_ECARTRIDGE)
				rc = 0;
		}
		nevents += job->nitems;
	}
	if (rc == 0)
		rc = keel_ingest_flush(ing);
	char *err = rc != 0 ? keel_xstrdup(keel_ingest_errmsg(ing)) : NULL;
	int64_t t1 = keel_http_mono_usec();
	pthread_mutex_unlock(&srv->write_lock);

	struct keel_metrics *m = &srv->metrics;
	keel_metrics_batch(m, (uint64_t)(t1 - t0), njobs);
	if (rc != 0) {
		atomic_fetch_add(&m->store_errors, 1);
		keel_http_log(srv, "batch of %zu requests (%zu events) failed: %s", njobs,
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

/* Fact rows the writer folds a step when idle: a POST that arrives
 * meanwhile waits for one step at most (tens of milliseconds). */
#define IDLE_FOLD_SEQS 4096

/* One step of bringing the store's derived data for keel search up to
 * date (SQLite's current rows and spans, docs/http.md "Writes"): true
 * when rows are left. A failure is logged and ends the folding until the
 * next write; a search folds what is left itself. */
static bool fold_step(struct keel_server *srv)
{
	bool left = false;
	pthread_mutex_lock(&srv->write_lock);
	if (keel_store_fold(srv->writer, IDLE_FOLD_SEQS, &left))
		keel_http_log(srv, "folding for keel search failed: %s",
			      keel_store_errmsg(srv->writer));
	pthread_mutex_unlock(&srv->write_lock);
	return left;
}

/* The writer thread: takes every POST queued while it was busy (up to
 * GROUP_MAX_EVENTS events), ingests them as one batch and resumes their
 * connections. It waits for nothing else: a lone POST is a batch at once,
 * and under load batches grow by themselves. While no POST waits it folds
 * what it wrote, a step at a time, so that searches seldom have rows to
 * fold. After the queue is closed it drains what is left, so no
 * connection stays suspended. */
void *keel_http_writer_main(void *arg)
{
	struct keel_server *srv = arg;
	bool fold = false; /* written since the last fold left nothing */
	pthread_mutex_lock(&srv->queue_lock);
	for (;;) {
		while (!srv->queue_head && !srv->queue_closed) {
			if (!fold) {
				pthread_cond_wait(&srv->queue_cond, &srv->queue_lock);
				continue;
			}
			pthread_mutex_unlock(&srv->queue_lock);
			fold = fold_step(srv);
			pthread_mutex_lock(&srv->queue_lock);
		}
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

		if (srv->o.forward) {
			forward_group(srv, &srv->group, jobs);
		} else {
			ingest_group(srv, &srv->group, jobs);
			fold = true;
		}
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

/* The answer of a POST the writer has done with (docs/http.md). */
enum MHD_Result keel_http_answer_events(struct keel_server *srv, struct MHD_Connection *c,
					struct request *rq)
{
	struct ingest_job *job = &rq->job;
	pthread_mutex_lock(&srv->inflight_lock);
	rq->suspended = false;
	if (--srv->suspended == 0)
		pthread_cond_broadcast(&srv->inflight_cond);
	pthread_mutex_unlock(&srv->inflight_lock);
	keel_http_set_deadline(rq->conn, (int64_t)srv->o.request_timeout * 1000000);
	rq->route = ROUTE_DONE;
	if (job->rc != 0 && job->forwarded)
		return keel_http_answer_error(
		    srv, c, MHD_HTTP_SERVICE_UNAVAILABLE,
		    "log error (details in the server log): the log did not acknowledge "
		    "every event; some may be in it, and sending the batch again stores "
		    "none twice");
	/* The cause (paths, SQL errors) went to the log, not to clients of
	 * every tenant. */
	if (job->rc == KEEL_EUNCERTAIN)
		return keel_http_answer_error(
		    srv, c, MHD_HTTP_INTERNAL_SERVER_ERROR,
		    "store error (details in the server log) during the commit: "
		    "whether the batch was ingested is unknown; sending it again "
		    "is safe (events already ingested are answered as duplicates)");
	if (job->rc != 0)
		return keel_http_answer_error(
		    srv, c, MHD_HTTP_INTERNAL_SERVER_ERROR,
		    "store error (details in the server log); the batch was "
		    "rolled back, nothing was ingested, sending it again is safe");
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_addf(
	    &b,
	    "{\"events\":%zu,\"accepted\":%llu,\"duplicates\":%llu,\"conflicting\":%llu,"
	    "\"unhandled\":%llu,\"rejected\":[",
	    job->nitems, (unsigned long long)job->accepted,
	    (unsigned long long)job->duplicates, (unsigned long long)job->conflicting,
	    (unsigned long long)job->unhandled);
	if (job->rejects.len)
		keel_buf_add(&b, job->rejects.data, job->rejects.len);
	keel_buf_addc(&b, ']');
	if (job->rejected > ANSWER_MAX_LISTED)
		keel_buf_addf(&b, ",\"rejected_unlisted\":%llu",
			      (unsigned long long)(job->rejected - ANSWER_MAX_LISTED));
	keel_buf_adds(&b, ",\"conflicts\":[");
	if (job->conflicts.len)
		keel_buf_add(&b, job->conflicts.data, job->conflicts.len);
	keel_buf_addc(&b, ']');
	if (job->conflicting > ANSWER_MAX_LISTED)
		keel_buf_addf(&b, ",\"conflicts_unlisted\":%llu",
			      (unsigned long long)(job->conflicting - ANSWER_MAX_LISTED));
	keel_buf_addc(&b, '}');
	/* One event that did not go in is a failed request; a batch is
	 * answered 200 and lists what it rejected. */
	unsigned status = (rq->kind == BODY_SINGLE || rq->kind == BODY_BINARY) && job->rejected
			      ? MHD_HTTP_UNPROCESSABLE_CONTENT
			      : MHD_HTTP_OK;
	return keel_http_answer_json(srv, c, status, &b);
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
	keel_buf_add_json_str(&b, keel_str_make(msg.data, msg.len));
	keel_buf_free(&msg);
	keel_buf_addc(&b, '}');
	return keel_http_answer_json(srv, c, MHD_HTTP_FORBIDDEN, &b);
}

/* MHD_KeyValueIterator feeding each header to the binary-mode reader;
 * stops at the first it refuses. */
static enum MHD_Result add_ce_header(void *cls, enum MHD_ValueKind kind, const char *key,
				     const char *value)
{
	(void)kind;
	return keel_ce_binary_header(cls, key, value) ? MHD_YES : MHD_NO;
}

bool keel_http_start_binary(struct keel_server *srv, struct MHD_Connection *c,
			    struct request *rq, const char *content_type,
			    enum MHD_Result *ret)
{
	struct keel_ce_binary *b = keel_xmalloc(sizeof *b);
	keel_ce_binary_init(b);
	rq->binary = b;
	MHD_get_connection_values(c, MHD_HEADER_KIND, add_ce_header, b);
	if (b->err.len || !keel_ce_binary_attributes(b, content_type)) {
		rq->route = ROUTE_DONE;
		*ret = keel_http_answer_error(srv, c, MHD_HTTP_BAD_REQUEST, "%s", b->err.data);
		return false;
	}
	/* Refused before its body is read, like any POST of another
	 * tenant. */
	if (rq->token && !rq->token->all &&
	    !keel_token_allows(rq->token, b->tenant.data, b->tenant.len)) {
		rq->route = ROUTE_DONE;
		*ret = forbidden_tenant(srv, c, 0, b->tenant.data, b->tenant.len);
		return false;
	}
	return true;
}

struct claim_ctx {
	struct keel_server *srv;
	struct request *rq;
};

/* keel_http_items' grow and give_back: the events' memory counted with
 * the body's, as it is held. */
static bool claim_items(void *ud, size_t bytes)
{
	struct claim_ctx *cc = ud;
	return keel_http_claim(cc->srv, cc->rq, bytes);
}

static void give_back_items(void *ud, size_t bytes)
{
	struct claim_ctx *cc = ud;
	atomic_fetch_sub(&cc->srv->metrics.buffered, bytes);
	cc->rq->claimed -= bytes;
}

static enum MHD_Result answer_busy(struct keel_server *srv, struct MHD_Connection *c)
{
	return keel_http_answer_error(
	    srv, c, MHD_HTTP_SERVICE_UNAVAILABLE,
	    "server busy: the request's events do not fit beside the request bodies in "
	    "memory (--max-buffered); nothing was ingested; retry later, or send fewer "
	    "events a request");
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
enum MHD_Result keel_http_handle_events(struct keel_server *srv, struct MHD_Connection *c,
					struct request *rq)
{
	const char *body = rq->body.data ? rq->body.data : "";
	size_t blen = rq->body.len;
	if (rq->kind == BODY_BINARY) {
		/* The body is the event's data; the event is the envelope. A
		 * body longer than an event may be is left as it is: the
		 * ingester rejects it by its length, and no envelope (in base64
		 * 4/3 of the body, beside it) is written for nothing. */
		struct keel_ce_binary *b = rq->binary;
		if (blen <= srv->o.max_line) {
			if (!keel_ce_binary_data(b, body, blen, rq->binary_json))
				return keel_http_answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
							      "%s", b->err.data);
			body = b->json.data;
			blen = b->json.len;
		}
	} else if (is_blank_line(body, blen) && !memchr(body, '\n', blen)) {
		return keel_http_answer_error(srv, c, MHD_HTTP_BAD_REQUEST, "empty body");
	}
	if (rq->kind == BODY_JSON) {
		/* application/json: one event (an object) or a batch (an
		 * array); anything else is not events. */
		size_t p = 0;
		while (p < blen && (body[p] == ' ' || body[p] == '\t' || body[p] == '\r' ||
				    body[p] == '\n'))
			p++;
		if (p < blen && body[p] == '{')
			rq->kind = BODY_SINGLE;
		else if (p < blen && body[p] == '[')
			rq->kind = BODY_BATCH;
		else
			return keel_http_answer_error(
			    srv, c, MHD_HTTP_BAD_REQUEST,
			    "body: application/json must hold one event (a JSON object) "
			    "or an array of events; found something else at byte %zu",
			    p);
	}

	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	struct keel_json_error jerr;
	/* The events found, 24 bytes each beside the body: counted against
	 * max_buffered as they are held, like the body, so that a body of
	 * tiny events cannot take many times its size (docs/http.md,
	 * "Limits"). */
	struct claim_ctx cc = {srv, rq};
	struct keel_http_items items = {
	    .grow = claim_items, .give_back = give_back_items, .ud = &cc};
	enum MHD_Result ret = MHD_YES;
	const char *tenant = NULL;
	size_t tenant_len = 0;
	const size_t max_line = srv->o.max_line;

#define PUSH_ITEM(o_, l_, i_)                                                            \
	do {                                                                             \
		if (!keel_http_items_push(&items, (o_), (l_), (i_))) {                   \
			ret = answer_busy(srv, c);                                       \
			goto out;                                                        \
		}                                                                        \
	} while (0)

	switch (rq->kind) {
	case BODY_BINARY:
		/* Written by Keel from checked parts: the ingester judges it
		 * by the envelope rules, as any event. */
		PUSH_ITEM(0, blen, 0);
		break;
	case BODY_JSON: /* resolved above */
	case BODY_SINGLE:
		if (keel_json_parse(&doc, body, blen, &jerr) != 0) {
			ret = keel_http_answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
						     "body: invalid JSON at byte %zu: %s",
						     jerr.offset, jerr.msg);
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
		int src = keel_http_split_array(body, blen, &items, &why, &at);
		if (src == -2) {
			ret = answer_busy(srv, c);
			goto out;
		}
		if (src != 0) {
			ret = keel_http_answer_error(
			    srv, c, MHD_HTTP_BAD_REQUEST,
			    "body: not a JSON array of events at byte %zu: %s", at, why);
			goto out;
		}
		for (size_t i = 0; rq->token && !rq->token->all && i < items.n; i++) {
			const struct keel_http_item *it = &items.v[i];
			if (keel_json_parse(&doc, body + it->off, it->len, &jerr) == 0 &&
			    !tenant_allowed(rq->token, doc.root, &tenant, &tenant_len)) {
				ret = forbidden_tenant(srv, c, i, tenant, tenant_len);
				goto out;
			}
		}
		break;
	}
	case BODY_NDJSON: {
		/* One array for its events (the lines not blank, counted
		 * first), claimed at once: a body whose events do not fit is
		 * refused before any is found. */
		size_t lines = 0;
		for (size_t p = 0; p < blen;) {
			const char *nl = memchr(body + p, '\n', blen - p);
			size_t end = nl ? (size_t)(nl - body) : blen;
			if (!is_blank_line(body + p, end - p))
				lines++;
			p = nl ? end + 1 : blen;
		}
		if (!keel_http_items_reserve(&items, lines)) {
			ret = answer_busy(srv, c);
			goto out;
		}
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
					int prc =
					    keel_json_parse(&doc, body + p, len, &jerr);
					if (prc != 0 && first) {
						ret = keel_http_answer_error(
						    srv, c, MHD_HTTP_BAD_REQUEST,
						    "body: first event (index %llu): not "
						    "JSON at byte %zu: %s",
						    (unsigned long long)lineno,
						    jerr.offset, jerr.msg);
						goto out;
					}
					if (prc == 0 &&
					    !tenant_allowed(rq->token, doc.root, &tenant,
							    &tenant_len)) {
						ret = forbidden_tenant(
						    srv, c, lineno, tenant, tenant_len);
						goto out;
					}
				}
				first = false;
				PUSH_ITEM(p, len, lineno);
			}
			p = nl ? end + 1 : blen;
		}
		if (first) {
			ret = keel_http_answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
						     "empty body");
			goto out;
		}
		break;
	}
	}
#undef PUSH_ITEM

	/* Handed to the writer; the body (or binary mode's envelope) stays
	 * in rq until it is answered. */
	rq->job.base = body;
	rq->job.items = items.v;
	rq->job.nitems = items.n;
	items.v = NULL;
	/* The connection must not be cut while the server works on it. */
	keel_http_set_deadline(rq->conn, INT64_MAX);
	rq->route = ROUTE_EVENTS_QUEUED;
	if (!enqueue(srv, c, rq)) {
		rq->route = ROUTE_DONE;
		ret = keel_http_answer_error(
		    srv, c, MHD_HTTP_SERVICE_UNAVAILABLE,
		    "server stopping: nothing was ingested; send it again later");
	}
out:
	free(items.v);
	keel_json_doc_free(&doc);
	return ret;
}

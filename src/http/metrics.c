/*
 * metrics.c - the server's counters and their Prometheus text exposition
 * (GET /metrics). Every counter is a relaxed atomic: workers bump them
 * without a lock, and a scrape reads a consistent-enough snapshot (each
 * number is exact; numbers may be from instants microseconds apart).
 */
#include "http.h"

/* Batch latency bucket bounds in microseconds (0.1 ms to 10 s). */
static const uint64_t bucket_usec[KEEL_METRICS_BUCKETS] = {
	100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000,
	100000, 250000, 1000000, 2500000, 10000000,
};

static const char *const outcome_name[KEEL_OUTCOME_COUNT] = {
	[KEEL_OUTCOME_ACCEPTED] = "accepted",
	[KEEL_OUTCOME_DUPLICATE] = "duplicate",
	[KEEL_OUTCOME_CONFLICTING] = "conflicting",
	[KEEL_OUTCOME_UNHANDLED] = "unhandled",
	[KEEL_OUTCOME_REJECTED] = "rejected",
};

/* The statuses the server answers with; anything else counts as "other". */
static const unsigned status_code[KEEL_METRICS_STATUSES - 1] = {
	200, 400, 401, 403, 404, 405, 413, 415, 422, 500, 503,
};

void keel_metrics_init(struct keel_metrics *m)
{
	for (size_t i = 0; i < KEEL_OUTCOME_COUNT; i++)
		atomic_init(&m->events[i], 0);
	atomic_init(&m->batches, 0);
	atomic_init(&m->batch_requests, 0);
	for (size_t i = 0; i <= KEEL_METRICS_BUCKETS; i++)
		atomic_init(&m->batch_bucket[i], 0);
	atomic_init(&m->batch_usec_sum, 0);
	atomic_init(&m->store_errors, 0);
	atomic_init(&m->open_connections, 0);
	atomic_init(&m->writer_requests, 0);
	atomic_init(&m->connections_total, 0);
	atomic_init(&m->timeouts, 0);
	for (size_t i = 0; i < KEEL_METRICS_STATUSES; i++)
		atomic_init(&m->status[i], 0);
}

void keel_metrics_batch(struct keel_metrics *m, uint64_t usec, uint64_t requests)
{
	size_t b = 0;
	while (b < KEEL_METRICS_BUCKETS && usec > bucket_usec[b])
		b++;
	/* Stored per bucket, summed into cumulative form when rendered. */
	atomic_fetch_add_explicit(&m->batch_bucket[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->batch_usec_sum, usec, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->batches, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->batch_requests, requests, memory_order_relaxed);
}

void keel_metrics_status(struct keel_metrics *m, unsigned status)
{
	size_t i = 0;
	while (i < KEEL_METRICS_STATUSES - 1 && status_code[i] != status)
		i++;
	atomic_fetch_add_explicit(&m->status[i], 1, memory_order_relaxed);
}

static uint64_t get(atomic_uint_fast64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

/* Seconds with six decimals from microseconds, without floating point. */
static void add_seconds(struct keel_buf *out, uint64_t usec)
{
	keel_buf_addf(out, "%llu.%06llu", (unsigned long long)(usec / 1000000),
		      (unsigned long long)(usec % 1000000));
}

void keel_metrics_render(struct keel_metrics *m, struct keel_buf *out)
{
	keel_buf_adds(out, "# HELP keel_events_total Events received over HTTP, by outcome.\n"
			   "# TYPE keel_events_total counter\n");
	for (size_t i = 0; i < KEEL_OUTCOME_COUNT; i++)
		keel_buf_addf(out, "keel_events_total{outcome=\"%s\"} %llu\n", outcome_name[i],
			      (unsigned long long)get(&m->events[i]));

	keel_buf_adds(out, "# HELP keel_batch_duration_seconds Time to ingest one batch (the "
			   "POSTs gathered into one transaction), holding the writer.\n"
			   "# TYPE keel_batch_duration_seconds histogram\n");
	uint64_t cum = 0;
	for (size_t b = 0; b < KEEL_METRICS_BUCKETS; b++) {
		cum += get(&m->batch_bucket[b]);
		keel_buf_adds(out, "keel_batch_duration_seconds_bucket{le=\"");
		add_seconds(out, bucket_usec[b]);
		keel_buf_addf(out, "\"} %llu\n", (unsigned long long)cum);
	}
	cum += get(&m->batch_bucket[KEEL_METRICS_BUCKETS]);
	keel_buf_addf(out, "keel_batch_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
		      (unsigned long long)cum);
	keel_buf_adds(out, "keel_batch_duration_seconds_sum ");
	add_seconds(out, get(&m->batch_usec_sum));
	keel_buf_addf(out, "\nkeel_batch_duration_seconds_count %llu\n",
		      (unsigned long long)cum);

	keel_buf_addf(out,
		      "# HELP keel_batch_requests_total POSTs ingested in batches (per batch: "
		      "the requests it gathered).\n"
		      "# TYPE keel_batch_requests_total counter\n"
		      "keel_batch_requests_total %llu\n",
		      (unsigned long long)get(&m->batch_requests));
	keel_buf_addf(out,
		      "# HELP keel_store_errors_total Store failures (batches rolled back, "
		      "failed reads).\n"
		      "# TYPE keel_store_errors_total counter\n"
		      "keel_store_errors_total %llu\n",
		      (unsigned long long)get(&m->store_errors));
	keel_buf_addf(out,
		      "# HELP keel_open_connections Client connections open now.\n"
		      "# TYPE keel_open_connections gauge\n"
		      "keel_open_connections %lld\n",
		      (long long)atomic_load_explicit(&m->open_connections,
						      memory_order_relaxed));
	keel_buf_addf(out,
		      "# HELP keel_writer_requests POSTs handed to the writer and not yet "
		      "answered (queued, or in the batch being written).\n"
		      "# TYPE keel_writer_requests gauge\n"
		      "keel_writer_requests %lld\n",
		      (long long)atomic_load_explicit(&m->writer_requests,
						      memory_order_relaxed));
	keel_buf_addf(out,
		      "# HELP keel_connections_total Client connections accepted.\n"
		      "# TYPE keel_connections_total counter\n"
		      "keel_connections_total %llu\n",
		      (unsigned long long)get(&m->connections_total));
	keel_buf_addf(out,
		      "# HELP keel_connection_timeouts_total Connections closed for sending "
		      "a request too slowly.\n"
		      "# TYPE keel_connection_timeouts_total counter\n"
		      "keel_connection_timeouts_total %llu\n",
		      (unsigned long long)get(&m->timeouts));
	keel_buf_adds(out, "# HELP keel_http_responses_total Responses sent, by status.\n"
			   "# TYPE keel_http_responses_total counter\n");
	for (size_t i = 0; i < KEEL_METRICS_STATUSES; i++) {
		uint64_t v = get(&m->status[i]);
		if (i < KEEL_METRICS_STATUSES - 1)
			keel_buf_addf(out, "keel_http_responses_total{code=\"%u\"} %llu\n",
				      status_code[i], (unsigned long long)v);
		else
			keel_buf_addf(out, "keel_http_responses_total{code=\"other\"} %llu\n",
				      (unsigned long long)v);
	}
}

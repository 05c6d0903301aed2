/*
 * metrics.c - the server's counters and their Prometheus text exposition
 * (GET /metrics). Every counter is a relaxed atomic: workers bump them
 * without a lock, and a scrape reads a consistent-enough snapshot (each
 * number is exact; numbers may be from instants microseconds apart).
 */
#include "http.h"

#include "keel.h"

#include <stdlib.h>
#include <string.h>

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
	200, 301, 400, 401, 403, 404, 405, 413, 414, 415, 422, 431, 500, 503,
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
	atomic_init(&m->buffered, 0);
	atomic_init(&m->connections_total, 0);
	atomic_init(&m->timeouts, 0);
	for (size_t i = 0; i < KEEL_METRICS_STATUSES; i++)
		atomic_init(&m->status[i], 0);
	pthread_mutex_init(&m->tenants_lock, NULL);
	m->tenants = (struct keel_ptrvec){0};
	keel_map_init(&m->tenant_index);
	m->series_max = 100;
	m->series_list = false;
	m->series_names = (struct keel_ptrvec){0};
}

static int by_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int keel_metrics_tenants_option(struct keel_metrics *m, const char *spec,
				struct keel_buf *err)
{
	if (!spec)
		spec = KEEL_DEFAULT_METRICS_TENANTS;
	if (strcmp(spec, "all") == 0) {
		m->series_max = SIZE_MAX;
		return 0;
	}
	if (*spec >= '0' && *spec <= '9') {
		uint64_t v = 0;
		const char *p = spec;
		for (; *p >= '0' && *p <= '9' && v <= 100000000; p++)
			v = v * 10 + (uint64_t)(*p - '0');
		if (*p || v > 100000000) {
			keel_buf_addf(err,
				      "--metrics-tenants \"%.64s\": not a number from 0 to "
				      "100000000, \"all\" or a list of tenants",
				      spec);
			return KEEL_EINVAL;
		}
		m->series_max = (size_t)v;
		return 0;
	}
	/* A list: each name a valid tenant, none twice. */
	m->series_list = true;
	for (const char *p = spec;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (!keel_tenant_name_ok(p, len)) {
			keel_buf_addf(err,
				      "--metrics-tenants: \"%.*s\": not a tenant name (1-64 "
				      "bytes of [A-Za-z0-9._-]), a number or \"all\"",
				      (int)(len > 64 ? 64 : len), p);
			return KEEL_EINVAL;
		}
		char *name = keel_xmalloc(len + 1);
		memcpy(name, p, len);
		name[len] = '\0';
		keel_ptrvec_push(&m->series_names, name);
		if (!comma)
			break;
		p = comma + 1;
	}
	qsort(m->series_names.items, m->series_names.len, sizeof(char *), by_cstr);
	for (size_t i = 1; i < m->series_names.len; i++)
		if (strcmp(m->series_names.items[i - 1], m->series_names.items[i]) == 0) {
			keel_buf_addf(err, "--metrics-tenants: \"%s\" named twice",
				      (char *)m->series_names.items[i]);
			return KEEL_EINVAL;
		}
	return 0;
}

void keel_metrics_free(struct keel_metrics *m)
{
	for (size_t i = 0; i < m->tenants.len; i++) {
		struct keel_tenant_metrics *t = m->tenants.items[i];
		free(t->name);
		free(t);
	}
	keel_ptrvec_free(&m->tenants);
	keel_map_free(&m->tenant_index);
	for (size_t i = 0; i < m->series_names.len; i++)
		free(m->series_names.items[i]);
	keel_ptrvec_free(&m->series_names);
	pthread_mutex_destroy(&m->tenants_lock);
}

struct keel_tenant_metrics *keel_metrics_tenant(struct keel_metrics *m, const char *name,
						size_t len)
{
	uint64_t h = keel_hash64(name, len, 0);
	struct keel_tenant_metrics *found = NULL;
	pthread_mutex_lock(&m->tenants_lock);
	for (size_t i = keel_map_first(&m->tenant_index, h); i != SIZE_MAX && !found;
	     i = keel_map_next(&m->tenant_index, h, i)) {
		struct keel_tenant_metrics *t = m->tenant_index.values[i];
		if (t->len == len && memcmp(t->name, name, len) == 0)
			found = t;
	}
	if (!found) {
		found = keel_xcalloc(1, sizeof *found);
		found->name = keel_xmalloc(len + 1);
		memcpy(found->name, name, len);
		found->name[len] = 0;
		found->len = len;
		for (size_t i = 0; i < KEEL_OUTCOME_COUNT; i++)
			atomic_init(&found->events[i], 0);
		keel_ptrvec_push(&m->tenants, found);
		keel_map_put(&m->tenant_index, h, found);
	}
	pthread_mutex_unlock(&m->tenants_lock);
	return found;
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

static int name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);
	return c ? c : (alen > blen) - (alen < blen);
}

static int by_name(const void *a, const void *b)
{
	const struct keel_tenant_metrics *x = *(const struct keel_tenant_metrics *const *)a;
	const struct keel_tenant_metrics *y = *(const struct keel_tenant_metrics *const *)b;
	return name_cmp(x->name, x->len, y->name, y->len);
}

/* The counters named name in v[0..n), sorted by by_name, or NULL. */
static struct keel_tenant_metrics *find_sorted(struct keel_tenant_metrics **v, size_t n,
					       const char *name)
{
	size_t len = strlen(name), lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = name_cmp(v[mid]->name, v[mid]->len, name, len);
		if (c == 0)
			return v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static void add_tenant_series(struct keel_buf *out, const char *name,
			      struct keel_tenant_metrics *t)
{
	/* Tenant names are [A-Za-z0-9._-] (docs/time-and-envelopes.md):
	 * nothing in them needs escaping in a label value. */
	for (size_t i = 0; i < KEEL_OUTCOME_COUNT; i++) {
		if (i == KEEL_OUTCOME_REJECTED)
			continue;
		keel_buf_addf(out, "keel_tenant_events_total{tenant=\"%s\",outcome=\"%s\"} %llu\n",
			      name, outcome_name[i],
			      (unsigned long long)(t ? get(&t->events[i]) : 0));
	}
}

/* Whether name is among the sorted names. */
static bool listed(const struct keel_ptrvec *names, const char *name)
{
	size_t lo = 0, hi = names->len;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(names->items[mid], name);
		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* The per-tenant series: for the operator (scope NULL) those the option
 * names, the rest summed in keel_other_tenants_events_total, so that a
 * server of 20 000 tenants does not answer 80 000 series nobody asked for;
 * else each tenant of the scope (0 for one without events yet). */
static void render_tenants(struct keel_metrics *m, const struct keel_token_entry *scope,
			   struct keel_buf *out)
{
	keel_buf_adds(out, "# HELP keel_tenant_events_total Events of one tenant committed "
			   "over HTTP, by outcome.\n"
			   "# TYPE keel_tenant_events_total counter\n");
	pthread_mutex_lock(&m->tenants_lock);
	size_t n = m->tenants.len;
	struct keel_tenant_metrics **v = keel_xmalloc((n ? n : 1) * sizeof *v);
	if (n)
		memcpy(v, m->tenants.items, n * sizeof *v);
	pthread_mutex_unlock(&m->tenants_lock);
	/* v is in first-seen order: the first series_max keep their series
	 * for the server's life, as Prometheus wants of a series. */
	uint64_t others[KEEL_OUTCOME_COUNT] = {0};
	size_t shown = 0;
	if (!scope && !m->series_list) {
		shown = n < m->series_max ? n : m->series_max;
		for (size_t i = shown; i < n; i++)
			for (size_t k = 0; k < KEEL_OUTCOME_COUNT; k++)
				others[k] += get(&v[i]->events[k]);
	}
	qsort(v, shown, sizeof *v, by_name);
	if (!scope && m->series_list) {
		qsort(v, n, sizeof *v, by_name);
		for (size_t k = 0; k < m->series_names.len; k++) {
			const char *name = m->series_names.items[k];
			add_tenant_series(out, name, find_sorted(v, n, name));
		}
		for (size_t i = 0; i < n; i++)
			if (!listed(&m->series_names, v[i]->name))
				for (size_t k = 0; k < KEEL_OUTCOME_COUNT; k++)
					others[k] += get(&v[i]->events[k]);
	} else if (!scope) {
		for (size_t i = 0; i < shown; i++)
			add_tenant_series(out, v[i]->name, v[i]);
	}
	if (!scope) {
		keel_buf_adds(out, "# HELP keel_other_tenants_events_total Events committed over "
				   "HTTP of the tenants without series of their own "
				   "(--metrics-tenants), by outcome.\n"
				   "# TYPE keel_other_tenants_events_total counter\n");
		for (size_t i = 0; i < KEEL_OUTCOME_COUNT; i++)
			if (i != KEEL_OUTCOME_REJECTED)
				keel_buf_addf(out,
					      "keel_other_tenants_events_total{outcome=\"%s\"} "
					      "%llu\n",
					      outcome_name[i], (unsigned long long)others[i]);
		keel_buf_addf(out,
			      "# HELP keel_tenants_seen Tenants with events committed over HTTP "
			      "since the server started.\n"
			      "# TYPE keel_tenants_seen gauge\n"
			      "keel_tenants_seen %zu\n",
			      n);
	} else {
		qsort(v, n, sizeof *v, by_name);
		/* The scope's own names, not the set's: a tenant without events
		 * shows zeros, and nothing else is even looked at. */
		for (size_t k = 0; k < scope->ntenants; k++) {
			const char *name = scope->tenants[k];
			add_tenant_series(out, name, find_sorted(v, n, name));
		}
	}
	free(v);
}

void keel_metrics_render(struct keel_metrics *m, const struct keel_token_entry *scope,
			 struct keel_buf *out)
{
	if (scope && scope->all)
		scope = NULL;
	if (scope) {
		render_tenants(m, scope, out);
		return;
	}
	/* The version the server runs, as Prometheus's build_info series
	 * are: a constant 1, the facts in the labels. */
	keel_buf_addf(out,
		      "# HELP keel_build_info The Keel this server runs.\n"
		      "# TYPE keel_build_info gauge\n"
		      "keel_build_info{version=\"%s\"} 1\n",
		      keel_version());
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
		      "# HELP keel_buffered_body_bytes Request bodies and their events' bytes held "
		      "in memory now, all requests together (bounded by --max-buffered).\n"
		      "# TYPE keel_buffered_body_bytes gauge\n"
		      "keel_buffered_body_bytes %llu\n",
		      (unsigned long long)atomic_load_explicit(&m->buffered,
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
	render_tenants(m, NULL, out);
}

/*
 * http.h - internals of the HTTP server (docs/http.md) shared by the
 * files in src/http/: bearer tokens and their tenant
 * scopes (auth.c), Prometheus counters (metrics.c). server.c holds the
 * libmicrohttpd daemon and the routes; docs/http.md is the user's view.
 */
#ifndef KEEL_HTTP_H
#define KEEL_HTTP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sha256.h"
#include "util.h"
#include "event/binary_mode.h"
#include "event/media_type.h"

/* -------------------------------------------------------------- tokens */

/* One line of the token file: the SHA-256 of a token and what it may
 * touch. Tenant names are owned by the entry. */
struct keel_token_entry {
	uint8_t hash[KEEL_SHA256_LEN];
	bool all; /* "*": every tenant */
	bool forget; /* the right "forget": DELETE an entity of its tenants */
	char **tenants;
	size_t ntenants;
	unsigned line; /* where it was defined, for messages */
};

struct keel_tokens {
	struct keel_token_entry *v;
	size_t n;
};

/* Parses a token file's text (format in docs/http.md). Returns 0, or
 * KEEL_EINVAL with `line N: ...` in err (or "no tokens in the token file");
 * *out is then empty. */
int keel_tokens_parse(const char *text, size_t len, struct keel_tokens *out,
		      struct keel_buf *err);
/* Reads and parses a token file; KEEL_EIO when it cannot be read. */
int keel_tokens_load(const char *path, struct keel_tokens *out, struct keel_buf *err);
void keel_tokens_free(struct keel_tokens *t);
/* The entry whose hash is the SHA-256 of token[0..len), or NULL. Every
 * entry is compared in constant time and the scan never stops early, so the
 * time taken says nothing about which hash (or how much of it) matched. */
const struct keel_token_entry *keel_tokens_find(const struct keel_tokens *t,
						const char *token, size_t len);
/* Whether the entry's scope includes the tenant. */
bool keel_token_allows(const struct keel_token_entry *e, const char *tenant,
		       size_t len);
/* Whether s is a valid tenant name (docs/time-and-envelopes.md). */
bool keel_tenant_name_ok(const char *s, size_t len);

/* ----------------------------------------------------------------- bodies */

/* One event of a request body: where its text is, and its index (array
 * position or line number, from 0). */
struct keel_http_item {
	size_t off, len;
	uint64_t index;
};

/* A request's events, as found in its body. The array grows by doubling,
 * or once to a size reserved beforehand. Before each growth grow (when not
 * NULL) is asked for the new array's bytes, and after it give_back is told
 * the old array's, so that the server counts against the memory all
 * requests may hold (docs/http.md, "Limits") what is really held: both
 * arrays while the one is copied into the other, then the new one; false
 * refuses. v is keel_xrealloc'd. */
struct keel_http_items {
	struct keel_http_item *v;
	size_t n, cap;
	bool (*grow)(void *ud, size_t bytes);
	void (*give_back)(void *ud, size_t bytes);
	void *ud;
};

/* Appends one event; false (nothing appended) when grow refused. */
bool keel_http_items_push(struct keel_http_items *it, size_t off, size_t len, uint64_t index);

/* Makes room for n events at once (an NDJSON body's lines, counted
 * first): one array of exactly that size, so no doubling leaves half of
 * it unused and no copy holds two; false when grow refused. */
bool keel_http_items_reserve(struct keel_http_items *it, size_t n);

/* Finds the elements of a top-level JSON array s[0..n) without building a
 * tree: strings (with their escapes) and nesting are followed and nothing
 * else is checked, since the ingester parses and validates every element.
 * So a body that is not an array at all is refused (400) while one bad
 * event in a batch is rejected alone, as in an NDJSON stream. Elements are
 * appended to *out, spans trimmed of whitespace. Returns 0; -1 with the
 * rule broken in *why and its byte offset in *at; or -2 when out's grow
 * refused more memory. Whenever the JSON parser accepts s as an array,
 * the elements found are exactly its members. */
int keel_http_split_array(const char *s, size_t n, struct keel_http_items *out,
			  const char **why, size_t *at);

/* ------------------------------------------------------------- metrics */

/* Upper bounds of the batch latency histogram, in microseconds. */
#define KEEL_METRICS_BUCKETS 14

enum keel_outcome {
	KEEL_OUTCOME_ACCEPTED,
	KEEL_OUTCOME_DUPLICATE,
	KEEL_OUTCOME_CONFLICTING,
	KEEL_OUTCOME_UNHANDLED,
	KEEL_OUTCOME_REJECTED,
	KEEL_OUTCOME_COUNT
};

/* HTTP statuses the server answers with, counted by class of route. */
#define KEEL_METRICS_STATUSES 15

/* One tenant's event counters, created when the first event of it is
 * committed and kept (at the same address) for the server's life. */
struct keel_tenant_metrics {
	char *name; /* NUL-terminated, owned */
	size_t len;
	atomic_uint_fast64_t events[KEEL_OUTCOME_COUNT];
};

/* Counters updated lock-free from every worker thread. */
struct keel_metrics {
	atomic_uint_fast64_t events[KEEL_OUTCOME_COUNT];
	atomic_uint_fast64_t batches;
	atomic_uint_fast64_t batch_requests; /* POSTs gathered into those batches */
	atomic_uint_fast64_t batch_bucket[KEEL_METRICS_BUCKETS + 1]; /* last: +Inf */
	atomic_uint_fast64_t batch_usec_sum;
	atomic_uint_fast64_t store_errors;
	atomic_int_fast64_t open_connections;
	atomic_int_fast64_t writer_requests; /* POSTs queued for or in the writer */
	/* Request bodies held in memory, all requests together: the budget
	 * max_buffered bounds, and a gauge. */
	atomic_size_t buffered;
	atomic_uint_fast64_t connections_total;
	atomic_uint_fast64_t timeouts; /* connections cut by the watchdog */
	atomic_uint_fast64_t status[KEEL_METRICS_STATUSES];
	/* Per tenant: the lock guards the set, not the counters. Every
	 * tenant is counted (a scoped token sees its own tenants' series);
	 * the operator's scrape shows those the option names (below). */
	pthread_mutex_t tenants_lock;
	struct keel_ptrvec tenants; /* struct keel_tenant_metrics *, first seen first */
	struct keel_map tenant_index;
	/* keel_server_options.metrics_tenants: the first series_max tenants
	 * seen (SIZE_MAX: all), or, when series_list is set, exactly those
	 * names (sorted; owned). */
	size_t series_max;
	bool series_list;
	struct keel_ptrvec series_names;
};

void keel_metrics_init(struct keel_metrics *m);
/* Reads keel_server_options.metrics_tenants (NULL: the default) into m.
 * KEEL_EINVAL with the rule broken in err for anything else than a number,
 * "all" or a list of valid tenant names. */
int keel_metrics_tenants_option(struct keel_metrics *m, const char *spec,
				struct keel_buf *err);
void keel_metrics_free(struct keel_metrics *m);
/* The counters of tenant name[0..len), created on first use. */
struct keel_tenant_metrics *keel_metrics_tenant(struct keel_metrics *m, const char *name,
						size_t len);
/* Records one committed (or failed) batch, how long it took and how many
 * POSTs it gathered. */
void keel_metrics_batch(struct keel_metrics *m, uint64_t usec, uint64_t requests);
void keel_metrics_status(struct keel_metrics *m, unsigned status);
/* Appends the Prometheus text exposition (format 0.0.4) of what scope may
 * see: everything when scope is NULL (no token file) or covers every
 * tenant; otherwise only the per-tenant series of its own tenants, since
 * every server-wide figure also counts other tenants' traffic. */
void keel_metrics_render(struct keel_metrics *m, const struct keel_token_entry *scope,
			 struct keel_buf *out);

#endif

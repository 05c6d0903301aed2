/*
 * server.h - what the files of keel serve share: the server's state and
 * limits, the per-request types, and each file's entry points. Internal to
 * src/http/ (http.h holds the server's building blocks: tokens, metrics,
 * SHA-256, bodies).
 *
 *   server.c         start and stop, the daemon's options, routing
 *   answer.c    answers: JSON text, errors, the log, percent-decoding
 *   watchdog.c  connections' header and request timeouts
 *   events.c    POST /v1/events: checks, the writer thread, group commit
 *                    (the content modes' building blocks are in http.h:
 *                    media_type.c, binary_mode.c, body.c)
 *   reads.c     the read endpoints and the pool of read handles
 *   tls.c       HTTPS: the certificate and key files
 *   ui.c             the page at /ui/ and its assets, compiled in
 *   server_bench.h   the null mode, for bench_http only
 */
#ifndef KEEL_HTTP_SERVER_H
#define KEEL_HTTP_SERVER_H

#include "http.h"
#include "server_bench.h"

#include "keel.h"
#include "log/store_map.h"
#include "event/batch.h"
#include "event/envelope.h"
#include "store/store.h"
#include "event/json.h"

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
#define DEFAULT_MAX_CONNECTIONS 1000
#define DEFAULT_MAX_PER_IP 64
#define DEFAULT_IDLE_TIMEOUT 30
#define DEFAULT_HEADER_TIMEOUT 10
#define DEFAULT_REQUEST_TIMEOUT 60
#define DEFAULT_GRACE 10
/* Per-connection memory for headers and the read buffer: it bounds the
 * request line and headers a client can send. */
#define CONNECTION_MEMORY (64u << 10)
/* Keel's own limits on the request target (path and query) and on the
 * header fields, answered 414 and 431 in JSON. Both well inside
 * CONNECTION_MEMORY, which must hold them, the read buffer and MHD's own
 * bookkeeping: past it libmicrohttpd answers with its own HTML page. */
#define MAX_REQUEST_TARGET (8u << 10)
#define MAX_HEADER_BYTES (16u << 10)
_Static_assert(MAX_REQUEST_TARGET + MAX_HEADER_BYTES <= CONNECTION_MEMORY / 2,
	       "the head limits must fit well inside a connection's memory");
#define WATCHDOG_TICK_MS 100
/* The writer stops adding POSTs to a batch once it holds this many
 * events (one POST is never split). */
#define GROUP_MAX_EVENTS 4096
/* The GnuTLS priority string of keel serve's HTTPS: TLS 1.2 and 1.3 only. */
#define KEEL_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
/* A POST's answer lists at most this many rejected events and as many
 * conflicting duplicates (the first by index); past it, counts say how
 * many more (docs/http.md, "The answer"), so that an answer stays small
 * whatever the request. */
#define ANSWER_MAX_LISTED 1000
/* How long a stop waits for resumed connections to be answered. */
#define RESUME_WAIT_S 5

/* One TCP connection, for the watchdog (MHD's socket_context). */
struct conn {
	struct conn *prev, *next;
	int fd;
	/* Monotonic microseconds by which the client must have sent what it
	 * owes (headers, or a whole request); INT64_MAX while the server
	 * itself is working on the request. */
	atomic_int_fast64_t deadline;
	bool cut;
	struct request *rq; /* the request under way, for the answer's log */
};

enum route {
	ROUTE_EVENTS,
	ROUTE_EVENTS_QUEUED, /* with the writer; answered when resumed */
	ROUTE_NULL_EVENTS,
	ROUTE_READ, /* GET: answered when the (empty) body is done */
	ROUTE_PUBLIC, /* GET of /healthz or the page: likewise, without a token */
	ROUTE_FORGET, /* DELETE of an entity: answered likewise */
	ROUTE_DONE, /* answered: on the first call (an error), or already */
};

/* How a POST carries its events (docs/http.md, "POST /v1/events"). */
enum body_kind {
	BODY_SINGLE, /* structured mode: one JSON event */
	BODY_BATCH,  /* batch mode: a JSON array */
	BODY_NDJSON,
	BODY_JSON,   /* application/json: an object or an array, seen in the body */
	BODY_BINARY, /* binary mode: ce- headers, the body is the data */
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
	bool forwarded; /* to the log (--forward): rc is the log's failure */
	uint64_t accepted, duplicates, conflicting, unhandled, rejected;
	uint64_t conflicts_listed; /* of conflicting, at most ANSWER_MAX_LISTED */
	struct keel_buf rejects; /* the "rejected" array's members */
	struct keel_buf conflicts; /* the "conflicts" array's members */
	/* The tenant of the events that went in, for the request log: its
	 * name when there was exactly one, tenants counting up to 2. */
	char tenant[KEEL_TENANT_MAX + 1];
	unsigned tenants;
};

/* One HTTP request (MHD's con_cls). */
struct request {
	enum route route;
	const struct keel_http_route *endpoint; /* NULL: no such path */
	enum body_kind kind;
	struct conn *conn;
	const struct keel_token_entry *token; /* NULL when no token file */
	struct keel_buf body;
	/* Binary mode: the event read from the headers; whether the body
	 * is JSON data. */
	struct keel_ce_binary *binary;
	bool binary_json;
	size_t received;
	size_t claimed; /* bytes counted against max_buffered */
	bool too_large;
	bool suspended; /* queued, not yet back on its worker (inflight_lock) */
	struct ingest_job job;
	/* For the request log (only kept when there is one). */
	int64_t started; /* monotonic microseconds, headers in */
	char *method, *path;
	unsigned status; /* of the answer queued; 0: none */
	size_t bytes;	 /* of its body */
	struct keel_buf tenant; /* a read's tenant, as decoded; data NULL: none */
};

/* The batch the writer thread is building (each of its events names its
 * POST itself: keel_batch_event.owner). */
struct group {
	struct ingest_job *cur;	  /* the POST whose events are being added */
	/* --forward: per event the publisher took (its seq), the POST it
	 * came in; the publisher is made anew after a failed group, so no
	 * seq outlives its group. */
	struct keel_ptrvec published_by;
	/* For counting outcomes by tenant: the ingester (whose batch tells
	 * each event's tenant), the counters, the tenant counted last. */
	struct keel_ingest *ing;
	struct keel_metrics *metrics;
	struct keel_tenant_metrics *last;
};

struct keel_server {
	struct keel_server_options o;
	bool null_mode; /* keel_server_start_dropping_events */
	char *store_url;
	bool shared_store; /* keel_store_state_in_handle: reads go through the writer */
	struct MHD_Daemon *daemon;
	uint16_t port;

	/* HTTPS: the PEM texts handed to libmicrohttpd (tls.c), kept for
	 * the daemon's life; data NULL: plain HTTP. */
	struct keel_buf tls_cert_pem, tls_key_pem;
	/* While the daemon starts: libmicrohttpd's first message, and
	 * whether any was about TLS, for the error (its reason for refusing
	 * a certificate is only logged). */
	pthread_mutex_t start_log_lock;
	struct keel_buf start_log;
	bool starting;
	bool start_tls_failed;

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
	/* --forward: the writer thread's publisher instead of ing; made
	 * again after it failed (NULL until then). */
	struct keel_publisher *pub;
	struct keel_log_options forward;

	/* Idle read handles (SQL stores). */
	pthread_mutex_t readers_lock;
	struct keel_ptrvec readers;
	/* --store-map: each tenant read from its partition's store, pools[i]
	 * the idle read handles of map.urls[i] (under readers_lock). */
	bool mapped;
	struct keel_store_map map;
	uint32_t map_partitions;
	struct keel_ptrvec *pools;

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
};

/* The read endpoints (reads.c). */
enum read_kind {
	READ_SHOW,
	READ_HISTORY,
	READ_WHY,
	READ_STATS,
	READ_TENANTS,  /* GET /v1/tenants */
	READ_ENTITIES, /* GET /v1/tenants/T/entities */
	READ_SEARCH,   /* GET /v1/tenants/T/search */
};

/* Routes (routes.c): every path the server answers. */
enum endpoint {
	EP_EVENTS,
	EP_TENANTS,
	EP_STATS,
	EP_ENTITIES,
	EP_SEARCH,
	EP_ENTITY,
	EP_HISTORY,
	EP_WHY,
	EP_OPENAPI,
	EP_HEALTHZ,
	EP_METRICS,
	EP_UI_MOVED, /* /ui: 301 to /ui/ */
	EP_UI,	     /* the page, at each of its views' addresses */
	EP_UI_ASSET,
};

struct keel_http_route {
	const char *path;  /* as the OpenAPI document writes it: "/v1/tenants/{tenant}/stats" */
	enum endpoint endpoint;
	const char *allow; /* the methods it takes, as the Allow header lists them */
	bool public;	   /* needs no token: it holds no data */
	bool rest;	   /* its last parameter takes the rest of the path, '/' and all */
};

#define KEEL_HTTP_MAX_SEGMENTS 8
extern const struct keel_http_route keel_http_routes[];
extern const size_t keel_http_nroutes;
/* The route whose path url's is (the query string already cut off by
 * libmicrohttpd), or NULL; its segments, still percent-escaped, in
 * seg[0..*n) and len (KEEL_HTTP_MAX_SEGMENTS at most). */
const struct keel_http_route *keel_http_route_find(const char *url, const char **seg,
						   size_t *len, size_t *n);
/* Whether r takes method (as sent: methods are case-sensitive). */
bool keel_http_route_allows(const struct keel_http_route *r, const char *method);

/* Answers (answer.c) */
bool keel_http_percent_decode(const char *s, size_t len, struct keel_buf *out);
/* {"error":"MESSAGE"} and a newline into the empty b: every error
 * answer's body, also those sent with other headers (ui.c). */
void keel_http_error_doc(struct keel_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void keel_http_error_vdoc(struct keel_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* The message of a 405, of the method: one wording everywhere. */
#define KEEL_HTTP_NOT_ALLOWED "method %s: not allowed here"
enum MHD_Result keel_http_answer_not_allowed(struct keel_server *srv,
					     struct MHD_Connection *c, const char *method,
					     const char *allow);
enum MHD_Result keel_http_answer_error(struct keel_server *srv, struct MHD_Connection *c,
				       unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
enum MHD_Result keel_http_answer_const(struct keel_server *srv, struct MHD_Connection *c,
				       const char *json);
enum MHD_Result keel_http_answer_json(struct keel_server *srv, struct MHD_Connection *c,
				      unsigned status, struct keel_buf *b);
enum MHD_Result keel_http_answer(struct keel_server *srv, struct MHD_Connection *c,
				 unsigned status, char *body, size_t len,
				 const char *content_type);
/* Queues body[0..len) with the header fields in headers (name, value,
 * ..., NULL). persistent: the body outlives the answer (a constant) and
 * is sent from where it is; else it is copied. */
enum MHD_Result keel_http_answer_headers(struct keel_server *srv, struct MHD_Connection *c,
					 unsigned status, const char *body, size_t len,
					 bool persistent, const char *const *headers);
/* The page at /ui/ (ui.c): its paths are /ui and those under /ui/ (the
 * routes EP_UI_MOVED, EP_UI, EP_UI_ASSET). They need no token: the page
 * and its assets hold no data (docs/ui.md). keel_http_ui answers a GET or
 * HEAD of one; other methods get keel_http_ui_not_allowed. */
enum MHD_Result keel_http_ui(struct keel_server *srv, struct MHD_Connection *c, const char *url);
/* GET /v1/openapi.json (openapi.c): docs/openapi.json, compiled in. */
enum MHD_Result keel_http_openapi(struct keel_server *srv, struct MHD_Connection *c);
enum MHD_Result keel_http_ui_not_allowed(struct keel_server *srv, struct MHD_Connection *c,
					 const char *method);
void keel_http_log(struct keel_server *srv, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Writes rq's line to the request log, if there is one. */
void keel_http_log_request(struct keel_server *srv, struct request *rq);
int64_t keel_http_mono_usec(void);

/* The watchdog (watchdog.c) */
void keel_http_mhd_logger(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
size_t keel_http_no_unescape(void *cls, struct MHD_Connection *c, char *s);
void keel_http_on_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
			    enum MHD_RequestTerminationCode toe);
void keel_http_on_connection(void *cls, struct MHD_Connection *connection,
			     void **socket_context,
			     enum MHD_ConnectionNotificationCode toe);
void keel_http_set_deadline(struct conn *c, int64_t usec_from_now);
void *keel_http_watchdog_main(void *arg);

/* Counts n more bytes of rq's (its body, its events) against the memory
 * all requests' bodies may hold at once (max_buffered), so that many
 * large uploads together cannot exhaust memory where one alone could
 * not. False (nothing counted) when over. Released when rq ends. */
bool keel_http_claim(struct keel_server *srv, struct request *rq, size_t n);

/* Events (events.c) */
/* Binary mode, once the headers are in: reads them into rq->binary and
 * checks the tenant against the token. False after queueing the refusal. */
bool keel_http_start_binary(struct keel_server *srv, struct MHD_Connection *c,
			    struct request *rq, const char *content_type,
			    enum MHD_Result *ret);
enum MHD_Result keel_http_handle_events(struct keel_server *srv, struct MHD_Connection *c,
					struct request *rq);
enum MHD_Result keel_http_answer_events(struct keel_server *srv, struct MHD_Connection *c,
					struct request *rq);
void *keel_http_writer_main(void *arg);
void keel_http_on_outcome(void *ud, uint64_t position, size_t seq,
			  enum keel_ingest_outcome o);
void keel_http_on_reject(void *ud, uint64_t position, const char *id, const char *message,
			 const char *input, size_t input_len);
void keel_http_on_published(void *ud, uint64_t position, size_t seq, bool duplicate);
/* --forward: the writer's publisher, made (again); 0, or the error with
 * err set. */
int keel_http_forward_open(struct keel_server *srv, struct keel_buf *err);

/* HTTPS (tls.c): reads srv->o.tls_cert and tls_key into
 * srv->tls_cert_pem and tls_key_pem; the error names the file. */
int keel_http_tls_load(struct keel_server *srv, struct keel_buf *err);
void keel_http_tls_free(struct keel_server *srv);

/* Reads (reads.c). A read handle for tenant (NULL: any; with a store
 * map, the tenant's partition's store, else the first of the map) until
 * put back (on the memory store: the writer, with its mutex held); NULL
 * with *err (malloc'd) when none can be opened. */
struct keel_store *keel_http_reader_get(struct keel_server *srv, const char *tenant,
					char **err);
/* With a store map: the pool index of a tenant's store (tenant NULL: 0). */
size_t keel_http_store_of(const struct keel_server *srv, const char *tenant);
void keel_http_reader_put(struct keel_server *srv, struct keel_store *s);
/* Reads (reads.c). tenant is NULL for READ_TENANTS, which lists
 * the tenants tok (NULL: no token file) may see. */
enum MHD_Result keel_http_handle_read(struct keel_server *srv, struct MHD_Connection *c,
				      enum read_kind kind, const char *tenant,
				      const char *subject,
				      const struct keel_token_entry *tok);
/* DELETE /v1/tenants/T/entities/S, the token's rights checked
 * (forget.c) */
enum MHD_Result keel_http_handle_forget(struct keel_server *srv, struct MHD_Connection *c,
					const struct keel_token_entry *tok,
					const char *tenant, const char *subject);

#endif

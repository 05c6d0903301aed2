/*
 * test_http.c - keel serve through real HTTP (src/http/): a small client on
 * plain sockets talks to a server started in-process on a free loopback
 * port, against the memory and SQLite stores (and one case on MariaDB).
 *
 * Covered: every endpoint and status code of docs/http.md, the three body
 * types, the tenant isolation matrix (a token of tenant A asking about or
 * posting to tenant B gets 403 and nothing is read or written), the
 * limits (413 before the body, per-IP limit, trickling and idle clients cut
 * while others are served), parallel writers and readers, group commit
 * (concurrent POSTs in one batch, each answered with its own outcome; a
 * store error failing the whole batch; on MariaDB a commit whose outcome
 * is unknown answered so), the sync of SQLite's log before each answer,
 * and a graceful stop with a batch under way.
 */
#include "support.h"
#include "event/json.h"
#include "http/server.h"
#ifdef KEEL_WITH_MYSQL
#include "store/mysql/internal.h"
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* --------------------------------------------------------------- client */

struct resp {
	int status;
	char *raw;  /* whole answer, NUL-terminated */
	char *body; /* into raw */
	size_t body_len;
};

static void resp_free(struct resp *r)
{
	free(r->raw);
	memset(r, 0, sizeof *r);
}

static int connect_port(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = {0};
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return -1;
	}
	struct timeval tv = {10, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

static bool send_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
		if (w <= 0)
			return false;
		c += w;
		n -= (size_t)w;
	}
	return true;
}

/* Reads until the peer closes (or an error / the 10 s timeout). */
static char *recv_all(int fd, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	for (;;) {
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
		}
		ssize_t r = recv(fd, buf + n, cap - n, 0);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

static void parse_resp(char *raw, size_t n, struct resp *r)
{
	r->raw = raw;
	r->status = 0;
	r->body = raw + n;
	r->body_len = 0;
	if (n >= 12 && strncmp(raw, "HTTP/1.", 7) == 0)
		r->status = (int)strtol(raw + 9, NULL, 10);
	char *sep = strstr(raw, "\r\n\r\n");
	if (sep) {
		r->body = sep + 4;
		r->body_len = n - (size_t)(r->body - raw);
	}
}

/* One request on a fresh connection (Connection: close). */
static void http(uint16_t port, const char *method, const char *path, const char *token,
		 const char *ctype, const char *body, struct resp *r)
{
	int fd = connect_port(port);
	assert_true(fd >= 0);
	char head[4096];
	size_t blen = body ? strlen(body) : 0;
	int h = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: test\r\nConnection: close\r\n",
			 method, path);
	if (token)
		h += snprintf(head + h, sizeof head - (size_t)h, "Authorization: Bearer %s\r\n",
			      token);
	if (ctype)
		h += snprintf(head + h, sizeof head - (size_t)h, "Content-Type: %s\r\n", ctype);
	if (body)
		h += snprintf(head + h, sizeof head - (size_t)h, "Content-Length: %zu\r\n", blen);
	h += snprintf(head + h, sizeof head - (size_t)h, "\r\n");
	assert_true(send_all(fd, head, (size_t)h));
	if (body)
		send_all(fd, body, blen);
	size_t n;
	char *raw = recv_all(fd, &n);
	close(fd);
	parse_resp(raw, n, r);
}

/* Status only; the answer is dropped. */
static int http_status(uint16_t port, const char *method, const char *path,
		       const char *token, const char *ctype, const char *body)
{
	struct resp r;
	http(port, method, path, token, ctype, body, &r);
	int st = r.status;
	resp_free(&r);
	return st;
}

/* Prints the answer when the status is not the one expected. */
#define assert_status(r, want)                                                  \
	do {                                                                    \
		if ((r).status != (want))                                       \
			fprintf(stderr, "answer: %s\n", (r).raw ? (r).raw : "");  \
		assert_int_equal((r).status, (want));                           \
	} while (0)

#define CT_ONE "application/cloudevents+json"
#define CT_BATCH "application/cloudevents-batch+json"
#define CT_NDJSON "application/x-ndjson"

/* ------------------------------------------------------------- fixtures */

/* How the answers name one of event()'s events (its source is "test"). */
#define TEST_REF(id) "{\"source\":\"test\",\"id\":\"" id "\"}"

/* A fleet event: vehicle V of tenant T reports status S at minute M. */
static char *event(const char *tenant, const char *id, const char *vehicle,
		   const char *status, int minute)
{
	char *buf = malloc(1024);
	snprintf(buf, 1024,
		 "{\"specversion\":\"1.0\",\"id\":\"%s\",\"tenant\":\"%s\","
		 "\"type\":\"fleet.vehicle.status_changed\",\"source\":\"test\","
		 "\"time\":\"2024-05-01T10:%02d:00Z\","
		 "\"data\":{\"vehicle_id\":\"%s\",\"status\":\"%s\",\"reason\":null}}",
		 id, tenant, minute, vehicle, status);
	return buf;
}

/* Joins events into a batch array or NDJSON text (malloc'd). */
static char *join(char **evs, size_t n, bool array)
{
	size_t len = 3;
	for (size_t i = 0; i < n; i++)
		len += strlen(evs[i]) + 1;
	char *out = malloc(len);
	size_t o = 0;
	if (array)
		out[o++] = '[';
	for (size_t i = 0; i < n; i++) {
		if (i && array)
			out[o++] = ',';
		size_t l = strlen(evs[i]);
		memcpy(out + o, evs[i], l);
		o += l;
		if (!array)
			out[o++] = '\n';
	}
	if (array)
		out[o++] = ']';
	out[o] = 0;
	return out;
}

static void free_all(char **evs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(evs[i]);
}

/* Three tokens: A (tenant-a), B (tenant-b), ALL (*). */
static const char *TOK_A = "keel_token_of_tenant_a_0123456789";
static const char *TOK_B = "keel_token_of_tenant_b_0123456789";
static const char *TOK_ALL = "keel_token_for_all_tenants_012345";

struct fx {
	char *dir;
	char url[512];
	char tokens[512];
	struct keel_server_options o;
	struct keel_server *srv;
	uint16_t port;
};

static void write_tokens(struct fx *f)
{
	char ha[KEEL_TOKEN_BUFSZ], hb[KEEL_TOKEN_BUFSZ], hall[KEEL_TOKEN_BUFSZ];
	keel_token_hash(TOK_A, strlen(TOK_A), ha);
	keel_token_hash(TOK_B, strlen(TOK_B), hb);
	keel_token_hash(TOK_ALL, strlen(TOK_ALL), hall);
	char text[1024];
	int n = snprintf(text, sizeof text,
			 "# test tokens\n%s tenant-a\n%s tenant-b,tenant-c\n%s *\n", ha, hb,
			 hall);
	snprintf(f->tokens, sizeof f->tokens, "%s/tokens", f->dir);
	keel_test_write_file(f->tokens, text, (size_t)n);
}

/* Prepares a fixture on "memory" or "sqlite"; auth adds the token file. */
static void fx_init(struct fx *f, const char *store, bool auth)
{
	memset(f, 0, sizeof *f);
	f->dir = keel_test_tmpdir();
	if (strcmp(store, "memory") == 0)
		snprintf(f->url, sizeof f->url, "memory:");
	else
		snprintf(f->url, sizeof f->url, "sqlite:%s/keel.db", f->dir);
	f->o.size = sizeof f->o;
	f->o.listen = "127.0.0.1:0";
	f->o.store_url = f->url;
	f->o.cartridge = KEEL_BUILTIN_CARTRIDGE; /* a new store records it */
	f->o.threads = 4;
	if (auth) {
		write_tokens(f);
		f->o.token_file = f->tokens;
	}
}

static void fx_start(struct fx *f)
{
	char *err = NULL;
	int rc = keel_server_start(&f->o, &f->srv, &err);
	if (rc)
		fprintf(stderr, "start: %s\n", err);
	assert_int_equal(rc, 0);
	f->port = keel_server_port(f->srv);
	assert_true(f->port > 0);
}

static void fx_stop(struct fx *f)
{
	keel_server_stop(f->srv);
	f->srv = NULL;
	keel_test_rmdir(f->dir);
	free(f->dir);
}

/* Stops the server and keeps the fixture's directory (the caller removes
 * it). */
static void fx_stop_keep_dir(struct fx *f)
{
	keel_server_stop(f->srv);
	f->srv = NULL;
}

/* The number of a "name":N in a JSON text, or -1. */
static long json_num(const char *json, const char *name)
{
	char key[64];
	snprintf(key, sizeof key, "\"%s\":", name);
	const char *p = strstr(json, key);
	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

/* The value of a metric line "name value", or -1. */
static long metric(const char *text, const char *name)
{
	const char *p = text;
	size_t n = strlen(name);
	while ((p = strstr(p, name)) != NULL) {
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return strtol(p + n + 1, NULL, 10);
		p += n;
	}
	return -1;
}

/* Calls cond(port) every 10 ms until it holds; false when it has not
 * within seconds. Tests wait for the condition they need this way, never
 * for a fixed time. */
static bool wait_for(bool (*cond)(uint16_t port), uint16_t port, int seconds)
{
	struct timespec now, end;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += seconds;
	for (;;) {
		if (cond(port))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			return false;
		const struct timespec ms10 = {0, 10 * 1000 * 1000};
		nanosleep(&ms10, NULL);
	}
}

/* The value of metric name on the server at port now, or -1. */
static long metric_now(uint16_t port, const char *name)
{
	struct resp r;
	http(port, "GET", "/metrics", NULL, NULL, NULL, &r);
	long v = r.body ? metric(r.body, name) : -1;
	resp_free(&r);
	return v;
}

/* --------------------------------------------------------------- cases */

static void healthz_and_routing(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "memory", false);
	fx_start(&f);
	struct resp r;
	http(f.port, "GET", "/healthz", NULL, NULL, NULL, &r);
	assert_status(r, 200);
	assert_non_null(strstr(r.body, "\"status\":\"ok\""));
	resp_free(&r);
	assert_int_equal(http_status(f.port, "GET", "/nope", NULL, NULL, NULL), 404);
	assert_int_equal(http_status(f.port, "GET", "/v1/tenants/a/nope", NULL, NULL, NULL),
			 404);
	assert_int_equal(
		http_status(f.port, "GET", "/v1/tenants/a/entities/x/y", NULL, NULL, NULL), 404);
	assert_int_equal(http_status(f.port, "GET", "/v1/events", NULL, NULL, NULL), 405);
	assert_int_equal(http_status(f.port, "DELETE", "/v1/tenants/a/stats", NULL, NULL, NULL),
			 405);
	assert_int_equal(http_status(f.port, "POST", "/healthz", NULL, CT_ONE, "{}"), 405);
	/* Tenant names follow the envelope rule. */
	assert_int_equal(http_status(f.port, "GET", "/v1/tenants/a%21b/stats", NULL, NULL, NULL),
			 400);
	assert_int_equal(http_status(f.port, "GET", "/v1/tenants/a%2/stats", NULL, NULL, NULL),
			 400);
	fx_stop(&f);
}

/* The value of header name in r's head ("" if absent), into buf. */
static const char *header_value(const struct resp *r, const char *name, char *buf,
				size_t n)
{
	buf[0] = 0;
	size_t nl = strlen(name);
	const char *p = strstr(r->raw, "\r\n");
	for (; p && p + 2 < r->body; p = strstr(p + 2, "\r\n")) {
		const char *h = p + 2;
		if (strncasecmp(h, name, nl) == 0 && h[nl] == ':') {
			h += nl + 1;
			while (*h == ' ')
				h++;
			size_t len = strcspn(h, "\r\n");
			if (len >= n)
				len = n - 1;
			memcpy(buf, h, len);
			buf[len] = 0;
			break;
		}
	}
	return buf;
}

/* A 405 names in Allow the methods its path does take (RFC 9110 15.5.6),
 * and only a known path answers 405: an unknown one is 404 whatever the
 * method (docs/http.md, "Endpoints"). */
static void method_not_allowed_names_the_path_methods(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "memory", false);
	fx_start(&f);
	static const struct {
		const char *method, *path, *allow;
	} cases[] = {
		{"GET", "/v1/events", "POST"},
		{"PUT", "/v1/events", "POST"},
		{"POST", "/healthz", "GET, HEAD"},
		{"POST", "/metrics", "GET, HEAD"},
		{"DELETE", "/v1/tenants/a/stats", "GET, HEAD"},
		{"POST", "/v1/tenants/a/entities/x", "GET, HEAD, DELETE"},
		{"PUT", "/v1/tenants/a/entities/x/history", "GET, HEAD"},
		{"POST", "/v1/tenants/a/entities/x/why", "GET, HEAD"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct resp r;
		char allow[64];
		http(f.port, cases[i].method, cases[i].path, NULL, NULL, NULL, &r);
		assert_status(r, 405);
		header_value(&r, "Allow", allow, sizeof allow);
		if (strcmp(allow, cases[i].allow) != 0)
			fprintf(stderr, "%s %s: Allow \"%s\"\n", cases[i].method,
				cases[i].path, allow);
		assert_string_equal(allow, cases[i].allow);
		assert_non_null(strstr(r.body, "not allowed here"));
		resp_free(&r);
	}
	static const char *const unknown[][2] = {
		{"DELETE", "/v1/nothing"},
		{"POST", "/v1/tenants/a/nope"},
		{"PUT", "/v1/tenants/a/entities/x/y"},
		{"POST", "/v1/tenants/a/entities/x/history/more"},
		{"POST", "/nope"},
	};
	for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
		struct resp r;
		http(f.port, unknown[i][0], unknown[i][1], NULL, NULL, NULL, &r);
		if (r.status != 404)
			fprintf(stderr, "%s %s\n", unknown[i][0], unknown[i][1]);
		assert_status(r, 404);
		resp_free(&r);
	}
	fx_stop(&f);
}

/* POST each body type, then read back through every read endpoint. */
static void post_and_read(const char *store)
{
	struct fx f;
	fx_init(&f, store, false);
	fx_start(&f);
	struct resp r;

	/* One CloudEvent. */
	char *one = event("tenant-a", "e-1", "V-1", "available", 0);
	http(f.port, "POST", "/v1/events", NULL, CT_ONE, one, &r);
	assert_status(r, 200);
	assert_int_equal(json_num(r.body, "accepted"), 1);
	assert_int_equal(json_num(r.body, "duplicates"), 0);
	resp_free(&r);
	/* The same again: a duplicate. */
	http(f.port, "POST", "/v1/events", NULL, CT_ONE, one, &r);
	assert_status(r, 200);
	assert_int_equal(json_num(r.body, "accepted"), 0);
	assert_int_equal(json_num(r.body, "duplicates"), 1);
	assert_int_equal(json_num(r.body, "conflicting"), 0);
	resp_free(&r);
	free(one);

	/* A batch with a bad event in the middle: index, id and error. */
	char *evs[4] = {
		event("tenant-a", "e-2", "V-1", "in_service", 5),
		event("tenant-a", "e-3", "V-1", "x", 99), /* minute 99: bad time */
		event("tenant-a", "e-4", "V-2", "available", 7),
		strdup("{\"specversion\":\"1.0\",\"id\":\"e-5\",\"tenant\":\"tenant-a\","
		       "\"type\":\"fleet.unknown\",\"source\":\"t\","
		       "\"time\":\"2024-05-01T10:08:00Z\",\"data\":{}}"),
	};
	char *batch = join(evs, 4, true);
	http(f.port, "POST", "/v1/events", NULL, CT_BATCH, batch, &r);
	assert_status(r, 200);
	assert_int_equal(json_num(r.body, "events"), 4);
	assert_int_equal(json_num(r.body, "accepted"), 3);
	assert_int_equal(json_num(r.body, "unhandled"), 1);
	assert_non_null(strstr(r.body, "\"rejected\":[{\"index\":1,\"id\":\"e-3\",\"error\":\""));
	assert_non_null(strstr(r.body, "time"));
	resp_free(&r);
	free(batch);
	free_all(evs, 4);

	/* NDJSON with a blank line and a line that is not JSON: index is the
	 * 0-based line. */
	char *nd1 = event("tenant-a", "e-6", "V-3", "available", 9);
	char *nd2 = event("tenant-a", "e-7", "V-3", "retired", 10);
	char nd[2048];
	snprintf(nd, sizeof nd, "%s\n\n{oops\r\n%s\n", nd1, nd2);
	http(f.port, "POST", "/v1/events", NULL, CT_NDJSON, nd, &r);
	assert_status(r, 200);
	assert_int_equal(json_num(r.body, "events"), 3);
	assert_int_equal(json_num(r.body, "accepted"), 2);
	assert_non_null(strstr(r.body, "\"rejected\":[{\"index\":2,\"id\":null,"));
	resp_free(&r);
	free(nd1);
	free(nd2);

	/* Reads. */
	http(f.port, "GET", "/v1/tenants/tenant-a/entities/vehicle:V-1?at=2024-05-01T10:06:00Z",
	     NULL, NULL, NULL, &r);
	assert_status(r, 200);
	assert_non_null(strstr(r.body, "\"subject\":\"vehicle:V-1\""));
	assert_non_null(strstr(r.body, "in_service"));
	resp_free(&r);
	/* As of an earlier time the earlier status, with the offset sent
	 * unescaped ('+' arrives as a space and is restored). */
	http(f.port, "GET",
	     "/v1/tenants/tenant-a/entities/vehicle%3AV-1?at=2024-05-01T12:02:00+02:00", NULL,
	     NULL, NULL, &r);
	assert_status(r, 200);
	assert_non_null(strstr(r.body, "\"available\""));
	assert_null(strstr(r.body, "in_service"));
	resp_free(&r);
	http(f.port, "GET", "/v1/tenants/tenant-a/entities/vehicle:V-1/history?predicate=status",
	     NULL, NULL, NULL, &r);
	assert_status(r, 200);
	assert_non_null(strstr(r.body, "\"e-1\""));
	assert_non_null(strstr(r.body, "\"e-2\""));
	resp_free(&r);
	http(f.port, "GET",
	     "/v1/tenants/tenant-a/entities/vehicle:V-1/why?predicate=status&at=2024-05-01T10:01:00Z",
	     NULL, NULL, NULL, &r);
	assert_status(r, 200);
	/* The envelope behind the value then: e-1's (e-2 closed its row). */
	assert_non_null(strstr(r.body, "\"id\":\"e-1\""));
	assert_null(strstr(r.body, "in_service"));
	resp_free(&r);
	http(f.port, "GET", "/v1/tenants/tenant-a/stats", NULL, NULL, NULL, &r);
	assert_status(r, 200);
	assert_int_equal(json_num(r.body, "events"), 6); /* e-1,2,4,5,6,7 */
	resp_free(&r);

	/* ?at=now is the current time, as --at now is on the command line:
	 * the "at" answered lies between two readings of the clock taken
	 * around the request. */
	int64_t before = keel_time_now();
	http(f.port, "GET", "/v1/tenants/tenant-a/entities/vehicle:V-1?at=now", NULL, NULL,
	     NULL, &r);
	int64_t after = keel_time_now();
	assert_status(r, 200);
	const char *at = strstr(r.body, "\"at\":\"");
	assert_non_null(at);
	at += 6;
	int64_t at_time;
	assert_int_equal(keel_time_parse(at, (size_t)(strchr(at, '"') - at), &at_time, NULL),
			 0);
	assert_true(before <= at_time && at_time <= after);
	assert_non_null(strstr(r.body, "\"status\":{\"value\":\"in_service\""));
	resp_free(&r);
	http(f.port, "GET", "/v1/tenants/tenant-a/entities/vehicle:V-1/why?predicate=status&at=now",
	     NULL, NULL, NULL, &r);
	assert_status(r, 200);
	assert_non_null(strstr(r.body, "\"value\":\"in_service\""));
	resp_free(&r);

	/* Before its first event the entity did not exist: 404 saying so,
	 * not a document with empty facts. */
	http(f.port, "GET", "/v1/tenants/tenant-a/entities/vehicle:V-1?at=2020-01-01T00:00:00Z",
	     NULL, NULL, NULL, &r);
	assert_status(r, 404);
	assert_non_null(strstr(r.body, "entity \\\"vehicle:V-1\\\" did not exist in tenant "
				       "\\\"tenant-a\\\" at 2020-01-01T00:00:00Z (first seen "
				       "2024-05-01T10:00:00Z)"));
	resp_free(&r);

	/* Not found, bad parameters. */
	assert_int_equal(http_status(f.port, "GET", "/v1/tenants/tenant-a/entities/vehicle:V-9",
				     NULL, NULL, NULL),
			 404);
	assert_int_equal(http_status(f.port, "GET", "/v1/tenants/tenant-z/stats", NULL, NULL,
				     NULL),
			 404);
	assert_int_equal(http_status(f.port, "GET",
				     "/v1/tenants/tenant-a/entities/vehicle:V-1/why", NULL, NULL,
				     NULL),
			 400);
	assert_int_equal(http_status(f.port, "GET",
				     "/v1/tenants/tenant-a/entities/vehicle:V-1?at=yesterday",
				     NULL, NULL, NULL),
			 400);
	fx_stop(&f);
}

static void post_and_read_memory(void **state)
{
	(void)state;
	post_and_read("memory");
}

static void post_and_read_sqlite(void **state)
{
	(void)state;
	post_and_read("sqlite");
}

/* On SQLite the answers are exactly what the library says, read through
 * an independent handle. */
static void reads_match_library_sqlite(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "sqlite", false);
	fx_start(&f);
	char *evs[3] = {
		event("tenant-a", "e-1", "A/B", "available", 0),
		event("tenant-a", "e-2", "A/B", "in_service", 5),
		event("tenant-a", "e-3", "C", "available", 6),
	};
	char *batch = join(evs, 3, true);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_BATCH, batch), 200);
	free(batch);
	free_all(evs, 3);

	struct keel_store *s = NULL;
	assert_int_equal(keel_store_open(f.url, &s, NULL), 0);
	int64_t at;
	assert_int_equal(keel_time_parse("2024-05-01T10:07:00Z", 20, &at, NULL), 0);
	char *want = NULL;
	struct resp r;
	/* A subject with a slash, sent as %2F. */
	assert_int_equal(keel_show(s, "tenant-a", "vehicle:A/B", KEEL_TEST_AT(at), &want), 0);
	http(f.port, "GET", "/v1/tenants/tenant-a/entities/vehicle:A%2FB?at=2024-05-01T10:07:00Z",
	     NULL, NULL, NULL, &r);
	assert_status(r, 200);
	assert_int_equal(r.body_len, strlen(want) + 1);
	assert_memory_equal(r.body, want, strlen(want));
	free(want);
	resp_free(&r);
	assert_int_equal(keel_history(s, "tenant-a", "vehicle:A/B", NULL, NULL, &want), 0);
	http(f.port, "GET", "/v1/tenants/tenant-a/entities/vehicle:A%2FB/history", NULL, NULL,
	     NULL, &r);
	assert_status(r, 200);
	assert_memory_equal(r.body, want, strlen(want));
	free(want);
	resp_free(&r);
	assert_int_equal(keel_why(s, "tenant-a", "vehicle:A/B", "status", KEEL_TEST_AT(at), &want), 0);
	http(f.port, "GET",
	     "/v1/tenants/tenant-a/entities/vehicle:A%2FB/why?predicate=status&at=2024-05-01T10%3A07%3A00Z",
	     NULL, NULL, NULL, &r);
	assert_status(r, 200);
	assert_memory_equal(r.body, want, strlen(want));
	free(want);
	resp_free(&r);
	assert_int_equal(keel_stats(s, "tenant-a", NULL, &want), 0);
	http(f.port, "GET", "/v1/tenants/tenant-a/stats", NULL, NULL, NULL, &r);
	assert_status(r, 200);
	assert_memory_equal(r.body, want, strlen(want));
	free(want);
	resp_free(&r);
	keel_store_close(s);
	fx_stop(&f);
}

static bool checkpointed(uint16_t port)
{
	return metric_now(port, "keel_sqlite_checkpoint_pages_total") > 0;
}

/* Each read sees every batch acknowledged before it: read handles (on
 * SQLite, their own connections) keep no stale snapshot between requests. */
static void reads_see_every_acknowledged_batch(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "sqlite", false);
	fx_start(&f);
	for (int i = 0; i < 20; i++) {
		char id[32], status[32], want[64];
		snprintf(id, sizeof id, "s-%d", i);
		snprintf(status, sizeof status, "status-%d", i);
		char *ev = event("tenant-a", id, "V-1", status, i);
		assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_ONE, ev), 200);
		free(ev);
		struct resp r;
		http(f.port, "GET", "/v1/tenants/tenant-a/entities/vehicle:V-1?at=2030-01-01T00:00:00Z",
		     NULL, NULL, NULL, &r);
		assert_status(r, 200);
		snprintf(want, sizeof want, "\"%s\"", status);
		assert_non_null(strstr(r.body, want));
		resp_free(&r);
	}
	/* The log written by those commits is copied back in the background
	 * by the store's own checkpointer (src/store/sqlite/checkpoint.c), not
	 * by a commit. */
	assert_true(wait_for(checkpointed, f.port, 10));
	fx_stop(&f);
}

/* The SQLite file a test's server writes, and whether every fact row in
 * it has been folded (docs/store-sqlite.md, "Current rows", "Spans"),
 * read with a connection of the test's own. */
static char folded_db[600];

static bool everything_folded(uint16_t port)
{
	(void)port;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	bool yes = sqlite3_open_v2(folded_db, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
		   sqlite3_prepare_v2(db,
				      "SELECT (SELECT value FROM meta WHERE key = "
				      "'fact_current_seq') = (SELECT max(seq) FROM fact_rows) AND "
				      "(SELECT count(*) FROM fact_spans) > 0",
				      -1, &st, NULL) == SQLITE_OK &&
		   sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
	sqlite3_finalize(st);
	sqlite3_close(db);
	return yes;
}

/* keel serve's writer folds what it wrote while no POST waits, with no
 * search asking: the current rows and the spans reach the last fact row,
 * and searches now and at an earlier time answer from them. */
static void writer_folds_when_idle(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "sqlite", false);
	fx_start(&f);
	snprintf(folded_db, sizeof folded_db, "%s", f.url + strlen("sqlite:"));
	/* ten vehicles, five statuses each: V-v takes s-r at minute 10r + v */
	char *evs[50];
	for (int i = 0; i < 50; i++) {
		char id[16], vehicle[16], status[16];
		snprintf(id, sizeof id, "f-%d", i);
		snprintf(vehicle, sizeof vehicle, "V-%d", i % 10);
		snprintf(status, sizeof status, "s-%d", i / 10);
		evs[i] = event("tenant-a", id, vehicle, status, 10 * (i / 10) + i % 10);
	}
	for (int part = 0; part < 5; part++) {
		char *batch = join(evs + 10 * part, 10, true);
		assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_BATCH, batch),
				 200);
		free(batch);
	}
	free_all(evs, 50);
	assert_true(wait_for(everything_folded, f.port, 10));
	struct resp r;
	http(f.port, "GET", "/v1/tenants/tenant-a/search?predicate=status&value=s-4", NULL, NULL,
	     NULL, &r);
	assert_status(r, 200);
	for (int v = 0; v < 10; v++) {
		char want[32];
		snprintf(want, sizeof want, "\"vehicle:V-%d\"", v);
		assert_non_null(strstr(r.body, want));
	}
	resp_free(&r);
	/* at 10:25 V-0 to V-5 have s-2, the rest still s-1 */
	http(f.port, "GET",
	     "/v1/tenants/tenant-a/search?predicate=status&value=s-2&at=2024-05-01T10:25:00Z",
	     NULL, NULL, NULL, &r);
	assert_status(r, 200);
	assert_non_null(strstr(r.body, "\"vehicle:V-5\""));
	assert_null(strstr(r.body, "\"vehicle:V-6\""));
	resp_free(&r);
	fx_stop(&f);
}

/* A store whose state lives in its one handle (sqlite::memory:, like
 * memory:) is read through the writer's handle: a read handle of its own
 * would be another, empty database. The server asks the store; it does
 * not know the scheme. */
static void in_memory_sqlite_is_read_through_the_writer(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "sqlite", false);
	snprintf(f.url, sizeof f.url, "sqlite::memory:");
	fx_start(&f);
	char *ev = event("tenant-a", "m-1", "V-1", "in-memory", 1);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_ONE, ev), 200);
	free(ev);
	struct resp r;
	http(f.port, "GET", "/v1/tenants/tenant-a/entities/vehicle:V-1?at=2030-01-01T00:00:00Z",
	     NULL, NULL, NULL, &r);
	assert_status(r, 200);
	assert_non_null(strstr(r.body, "\"in-memory\""));
	resp_free(&r);
	fx_stop(&f);
}

/* A store failure (here: another process holds SQLite's write lock past
 * the busy timeout) is a 500 naming the cause, counted in the metrics; the
 * batch was rolled back whole and sending it again works. */
static void store_error_is_500_and_nothing_written(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "sqlite", false);
	fx_start(&f);
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(f.url + 7, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
	char *evs[3] = {event("tenant-a", "x-1", "V-1", "a", 1),
			event("tenant-a", "x-2", "V-2", "b", 2),
			event("tenant-a", "x-3", "V-3", "c", 3)};
	char *batch = join(evs, 3, true);
	struct resp r;
	http(f.port, "POST", "/v1/events", NULL, CT_BATCH, batch, &r);
	assert_status(r, 500);
	assert_non_null(strstr(r.body, "nothing was ingested"));
	resp_free(&r);
	assert_int_equal(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(http_status(f.port, "GET", "/v1/tenants/tenant-a/stats", NULL, NULL,
				     NULL),
			 404);
	http(f.port, "POST", "/v1/events", NULL, CT_BATCH, batch, &r);
	assert_status(r, 200);
	assert_int_equal(json_num(r.body, "accepted"), 3);
	resp_free(&r);
	http(f.port, "GET", "/metrics", NULL, NULL, NULL, &r);
	assert_int_equal(metric(r.body, "keel_store_errors_total"), 1);
	assert_int_equal(metric(r.body, "keel_http_responses_total{code=\"500\"}"), 1);
	assert_int_equal(metric(r.body, "keel_events_total{outcome=\"accepted\"}"), 3);
	resp_free(&r);
	free(batch);
	free_all(evs, 3);
	fx_stop(&f);
}

static void bad_bodies(const char *store)
{
	struct fx f;
	fx_init(&f, store, false);
	f.o.max_body = 4096;
	f.o.max_line = 512;
	fx_start(&f);
	struct resp r;
	http(f.port, "POST", "/v1/events", NULL, CT_ONE, "{\"id\":", &r);
	assert_status(r, 400);
	assert_non_null(strstr(r.body, "invalid JSON"));
	resp_free(&r);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_BATCH, "[1,"), 400);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_BATCH, "{}"), 400);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_NDJSON, "hello\n"),
			 400);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_ONE, ""), 400);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_NDJSON, "\n \n"), 400);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, "text/plain", "{}"), 415);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, NULL, "{}"), 415);
	/* The array is split, not parsed whole: its shape is checked here,
	 * its elements one by one by the ingester. */
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_BATCH, "[1,]"), 400);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_BATCH, "[,]"), 400);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_BATCH, "[] x"), 400);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_BATCH, "[\"a]\""),
			 400);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_BATCH, "[{}}]"), 400);
	http(f.port, "POST", "/v1/events", NULL, CT_BATCH,
	     " [ {\"id\":\"d\",\"id\":\"d\"} , \"x,]\" ,[1 2] ]\n", &r);
	assert_status(r, 200);
	assert_int_equal(json_num(r.body, "events"), 3);
	assert_non_null(strstr(r.body, "{\"index\":0,"));
	assert_non_null(strstr(r.body, "duplicate key"));
	assert_non_null(strstr(r.body, "{\"index\":1,"));
	assert_non_null(strstr(r.body, "{\"index\":2,"));
	resp_free(&r);
	/* An event longer than max_line is rejected alone. */
	{
		char longstatus[400];
		memset(longstatus, 'x', sizeof longstatus - 1);
		longstatus[sizeof longstatus - 1] = 0;
		char *two[2] = {event("tenant-x", "l-1", "V-1", "ok", 1),
				event("tenant-x", "l-2", "V-1", longstatus, 2)};
		char *b = join(two, 2, true);
		http(f.port, "POST", "/v1/events", NULL, CT_BATCH, b, &r);
		assert_status(r, 200);
		assert_int_equal(json_num(r.body, "accepted"), 1);
		assert_non_null(strstr(r.body, "{\"index\":1,\"id\":null,\"error\":\"index 1: line longer"));
		resp_free(&r);
		free(b);
		free_all(two, 2);
	}
	/* An empty batch is a batch of nothing. */
	http(f.port, "POST", "/v1/events", NULL, CT_BATCH, "[]", &r);
	assert_status(r, 200);
	assert_int_equal(json_num(r.body, "events"), 0);
	resp_free(&r);
	/* One event that is rejected: 422 with the reason. */
	http(f.port, "POST", "/v1/events", NULL, CT_ONE "; charset=utf-8",
	     "{\"id\":\"x\",\"tenant\":\"tenant-a\"}", &r);
	assert_status(r, 422);
	assert_non_null(strstr(r.body, "\"index\":0,\"id\":\"x\""));
	resp_free(&r);

	/* Too large: 413 from the headers alone. The body is never sent:
	 * the answer must come without it. */
	int fd = connect_port(f.port);
	assert_true(fd >= 0);
	const char *head = "POST /v1/events HTTP/1.1\r\nHost: t\r\nContent-Type: " CT_BATCH
			   "\r\nContent-Length: 1000000000\r\n\r\n";
	assert_true(send_all(fd, head, strlen(head)));
	size_t n;
	char *raw = recv_all(fd, &n);
	close(fd);
	parse_resp(raw, n, &r);
	assert_status(r, 413);
	resp_free(&r);

	/* Too large without a length (chunked): cut off once past the limit,
	 * never ingested. */
	fd = connect_port(f.port);
	assert_true(fd >= 0);
	head = "POST /v1/events HTTP/1.1\r\nHost: t\r\nContent-Type: " CT_NDJSON
	       "\r\nTransfer-Encoding: chunked\r\n\r\n";
	assert_true(send_all(fd, head, strlen(head)));
	char *ev = event("tenant-a", "big", "V-1", "available", 1);
	char chunk[1024];
	int cl = snprintf(chunk, sizeof chunk, "%zx\r\n%s\n\r\n", strlen(ev) + 1, ev);
	for (int i = 0; i < 40; i++)
		if (!send_all(fd, chunk, (size_t)cl))
			break;
	send_all(fd, "0\r\n\r\n", 5);
	raw = recv_all(fd, &n);
	close(fd);
	parse_resp(raw, n, &r);
	assert_int_not_equal(r.status, 200);
	resp_free(&r);
	free(ev);

	/* Nothing of the above went in. */
	assert_int_equal(http_status(f.port, "GET", "/v1/tenants/tenant-a/stats", NULL, NULL,
				     NULL),
			 404);
	http(f.port, "GET", "/metrics", NULL, NULL, NULL, &r);
	assert_int_equal(metric(r.body, "keel_http_responses_total{code=\"413\"}"), 2);
	assert_int_equal(metric(r.body, "keel_http_responses_total{code=\"415\"}"), 2);
	resp_free(&r);
	fx_stop(&f);
}

static void bad_bodies_memory(void **state)
{
	(void)state;
	bad_bodies("memory");
}

static void bad_bodies_sqlite(void **state)
{
	(void)state;
	bad_bodies("sqlite");
}

/* Every endpoint, with a token of tenant A asking about or posting to
 * tenant B: 403, and nothing read or written. */
static void tenant_matrix(const char *store)
{
	struct fx f;
	fx_init(&f, store, true);
	fx_start(&f);
	struct resp r;

	/* Seed tenant-b with the token for all. */
	char *b1 = event("tenant-b", "b-1", "SECRET", "available", 0);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", TOK_ALL, CT_ONE, b1), 200);

	static const char *reads[] = {
		"/v1/tenants/tenant-b/entities/vehicle:SECRET",
		"/v1/tenants/tenant-b/entities/vehicle:SECRET?at=2024-05-01T10:00:00Z",
		"/v1/tenants/tenant-b/entities/vehicle:SECRET/history",
		"/v1/tenants/tenant-b/entities/vehicle:SECRET/history?predicate=status",
		"/v1/tenants/tenant-b/entities/vehicle:SECRET/why?predicate=status",
		"/v1/tenants/tenant-b/stats",
		"/v1/tenants/tenant-%62/stats", /* the same tenant, escaped */
	};
	for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
		http(f.port, "GET", reads[i], TOK_A, NULL, NULL, &r);
		assert_status(r, 403);
		assert_null(strstr(r.body, "SECRET"));
		assert_null(strstr(r.body, "b-1"));
		resp_free(&r);
		/* Without a token or with a wrong one: 401, never the data. */
		http(f.port, "GET", reads[i], NULL, NULL, NULL, &r);
		assert_status(r, 401);
		assert_non_null(strstr(r.raw, "WWW-Authenticate: Bearer"));
		resp_free(&r);
		assert_int_equal(http_status(f.port, "GET", reads[i], "keel_wrong", NULL, NULL),
				 401);
		/* The owner and the token for all may read. */
		assert_int_equal(http_status(f.port, "GET", reads[i], TOK_B, NULL, NULL), 200);
		assert_int_equal(http_status(f.port, "GET", reads[i], TOK_ALL, NULL, NULL), 200);
	}

	/* Posting to tenant B with A's token, in every body type, and mixed
	 * with A's own events: refused whole. */
	char *a1 = event("tenant-a", "a-1", "V-1", "available", 1);
	char *b2 = event("tenant-b", "b-2", "V-2", "available", 2);
	char *mixed[3] = {a1, b2, a1};
	char *batch = join(mixed, 2, true);
	char *nd = join(mixed, 2, false);
	http(f.port, "POST", "/v1/events", TOK_A, CT_ONE, b2, &r);
	assert_status(r, 403);
	resp_free(&r);
	http(f.port, "POST", "/v1/events", TOK_A, CT_BATCH, batch, &r);
	assert_status(r, 403);
	assert_non_null(strstr(r.body, "index 1: tenant \\\"tenant-b\\\""));
	resp_free(&r);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", TOK_A, CT_NDJSON, nd), 403);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_ONE, a1), 401);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", "keel_wrong", CT_ONE, a1), 401);
	/* Nothing was written: tenant-a has no data, tenant-b only b-1. */
	assert_int_equal(http_status(f.port, "GET", "/v1/tenants/tenant-a/stats", TOK_ALL, NULL,
				     NULL),
			 404);
	http(f.port, "GET", "/v1/tenants/tenant-b/stats", TOK_ALL, NULL, NULL, &r);
	assert_int_equal(json_num(r.body, "events"), 1);
	resp_free(&r);

	/* A's own events go in with A's token; B's token covers b and c. */
	assert_int_equal(http_status(f.port, "POST", "/v1/events", TOK_A, CT_ONE, a1), 200);
	assert_int_equal(http_status(f.port, "GET", "/v1/tenants/tenant-a/stats", TOK_A, NULL,
				     NULL),
			 200);
	assert_int_equal(http_status(f.port, "GET", "/v1/tenants/tenant-a/stats", TOK_B, NULL,
				     NULL),
			 403);
	assert_int_equal(http_status(f.port, "GET", "/v1/tenants/tenant-c/stats", TOK_B, NULL,
				     NULL),
			 404);
	http(f.port, "POST", "/v1/events", TOK_B, CT_NDJSON, nd, &r);
	assert_status(r, 403);
	resp_free(&r);

	/* /healthz needs no token; /metrics needs a valid one, and shows a
	 * scoped token its own tenants' series only: every server-wide figure
	 * also counts the other tenants' traffic. */
	assert_int_equal(http_status(f.port, "GET", "/healthz", NULL, NULL, NULL), 200);
	assert_int_equal(http_status(f.port, "GET", "/metrics", NULL, NULL, NULL), 401);
	http(f.port, "GET", "/metrics", TOK_A, NULL, NULL, &r);
	assert_status(r, 200);
	assert_int_equal(
	    metric(r.body, "keel_tenant_events_total{tenant=\"tenant-a\",outcome=\"accepted\"}"),
	    1);
	assert_null(strstr(r.body, "tenant-b"));
	assert_null(strstr(r.body, "keel_events_total"));
	assert_null(strstr(r.body, "keel_batch_duration_seconds"));
	assert_null(strstr(r.body, "keel_http_responses_total"));
	assert_null(strstr(r.body, "keel_open_connections"));
	assert_null(strstr(r.body, "keel_buffered_body_bytes"));
	resp_free(&r);
	/* B's scope: tenant-b's event, and tenant-c with nothing yet. */
	http(f.port, "GET", "/metrics", TOK_B, NULL, NULL, &r);
	assert_status(r, 200);
	assert_int_equal(
	    metric(r.body, "keel_tenant_events_total{tenant=\"tenant-b\",outcome=\"accepted\"}"),
	    1);
	assert_int_equal(
	    metric(r.body, "keel_tenant_events_total{tenant=\"tenant-c\",outcome=\"accepted\"}"),
	    0);
	assert_null(strstr(r.body, "tenant-a"));
	assert_null(strstr(r.body, "keel_events_total"));
	resp_free(&r);
	/* The token for all sees everything. */
	http(f.port, "GET", "/metrics", TOK_ALL, NULL, NULL, &r);
	assert_status(r, 200);
	assert_int_equal(metric(r.body, "keel_events_total{outcome=\"accepted\"}"), 2);
	assert_int_equal(metric(r.body, "keel_batch_duration_seconds_count"), 2);
	assert_true(metric(r.body, "keel_http_responses_total{code=\"403\"}") >= 10);
	assert_int_equal(
	    metric(r.body, "keel_tenant_events_total{tenant=\"tenant-a\",outcome=\"accepted\"}"),
	    1);
	assert_int_equal(
	    metric(r.body, "keel_tenant_events_total{tenant=\"tenant-b\",outcome=\"accepted\"}"),
	    1);
	assert_int_equal(
	    metric(r.body, "keel_tenant_events_total{tenant=\"tenant-b\",outcome=\"duplicate\"}"),
	    0);
	assert_null(strstr(r.body, "tenant=\"tenant-c\""));
	resp_free(&r);

	free(a1);
	free(b1);
	free(b2);
	free(batch);
	free(nd);
	fx_stop(&f);
}

static void tenant_matrix_memory(void **state)
{
	(void)state;
	tenant_matrix("memory");
}

static void tenant_matrix_sqlite(void **state)
{
	(void)state;
	tenant_matrix("sqlite");
}

static void loopback_only_without_tokens(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "memory", false);
	f.o.listen = "0.0.0.0:0";
	char *err = NULL;
	assert_int_equal(keel_server_start(&f.o, &f.srv, &err), KEEL_EINVAL);
	assert_null(f.srv);
	assert_non_null(strstr(err, "loopback"));
	free(err);
	/* With tokens it may listen anywhere (in plain HTTP when told to:
	 * tokens_in_clear_only_on_loopback). */
	write_tokens(&f);
	f.o.token_file = f.tokens;
	f.o.insecure_http = true;
	fx_start(&f);
	assert_int_equal(http_status(f.port, "GET", "/healthz", NULL, NULL, NULL), 200);
	keel_server_stop(f.srv);
	/* A bad token file stops the start, naming the line. */
	keel_test_write_file(f.tokens, "sha256:zz *\n", 12);
	f.o.listen = "127.0.0.1:0";
	err = NULL;
	assert_int_equal(keel_server_start(&f.o, &f.srv, &err), KEEL_EINVAL);
	assert_non_null(strstr(err, "line 1: hash: not 64 hex digits"));
	free(err);
	f.srv = NULL;
	keel_test_rmdir(f.dir);
	free(f.dir);
}

/* keel_server_check_options refuses with EINVAL and a message holding
 * want; keel_server_start refuses the same before it reads a file. */
static void refused(struct fx *f, const char *want)
{
	char *err = NULL;
	assert_int_equal(keel_server_check_options(&f->o, &err), KEEL_EINVAL);
	assert_non_null(err);
	if (!strstr(err, want))
		fail_msg("message \"%s\" does not say \"%s\"", err, want);
	free(err);
	err = NULL;
	assert_int_equal(keel_server_start(&f->o, &f->srv, &err), KEEL_EINVAL);
	assert_null(f->srv);
	assert_non_null(strstr(err, want));
	free(err);
}

/* Tokens cross the network in clear only where the operator said so:
 * off loopback, plain HTTP with a token file needs insecure_http (or TLS);
 * on loopback nothing changes. TLS files come both or neither. */
static void tokens_in_clear_only_on_loopback(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "memory", true);
	f.o.listen = "0.0.0.0:0";
	refused(&f, "tokens would cross the network in clear");
	f.o.listen = "[::]:0";
	refused(&f, "tokens would cross the network in clear");
	/* Files that do not exist: the refusal comes before any is read. */
	f.o.tls_cert = "/nonexistent/cert.pem";
	refused(&f, "--tls-cert without --tls-key");
	f.o.tls_cert = NULL;
	f.o.tls_key = "/nonexistent/key.pem";
	refused(&f, "--tls-key without --tls-cert");
	f.o.listen = "127.0.0.1:0";
	refused(&f, "--tls-key without --tls-cert");
	/* Both given, off loopback: the options pass; the start then fails
	 * on the first file, naming it. */
	f.o.listen = "0.0.0.0:0";
	f.o.tls_cert = "/nonexistent/cert.pem";
	char *err = NULL;
	assert_int_equal(keel_server_check_options(&f.o, &err), 0);
	assert_null(err);
	assert_int_equal(keel_server_start(&f.o, &f.srv, &err), KEEL_EIO);
	assert_string_equal(err,
			    "--tls-cert \"/nonexistent/cert.pem\": no such file or directory");
	free(err);
	err = NULL;
	f.o.tls_cert = f.o.tls_key = NULL;
	/* insecure_http lifts the refusal, and only where there are tokens. */
	f.o.insecure_http = true;
	assert_int_equal(keel_server_check_options(&f.o, &err), 0);
	fx_start(&f);
	assert_int_equal(http_status(f.port, "GET", "/v1/tenants/tenant-a/stats", TOK_A,
				     NULL, NULL),
			 404);
	keel_server_stop(f.srv);
	f.srv = NULL;
	f.o.token_file = NULL;
	refused(&f, "without a token file the server listens on loopback addresses only");
	/* On loopback, tokens in plain HTTP as before. */
	f.o.token_file = f.tokens;
	f.o.insecure_http = false;
	f.o.listen = "127.0.0.1:0";
	fx_start(&f);
	assert_int_equal(http_status(f.port, "GET", "/v1/tenants/tenant-a/stats", TOK_A,
				     NULL, NULL),
			 404);
	fx_stop(&f);
}

/* Sends text as one request on a fresh connection. */
static void raw_request(uint16_t port, const char *text, size_t len, struct resp *r)
{
	int fd = connect_port(port);
	assert_true(fd >= 0);
	assert_true(send_all(fd, text, len));
	size_t n;
	char *raw = recv_all(fd, &n);
	close(fd);
	parse_resp(raw, n, r);
}

/* A GET with a path of path_len bytes (after "/v1/tenants/t/entities/"),
 * a query of query_len and one header of header_len. */
static void big_get(uint16_t port, size_t path_len, size_t query_len, size_t header_len,
		    struct resp *r)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_adds(&b, "GET /v1/tenants/t/entities/");
	for (size_t i = 0; i < path_len; i++)
		keel_buf_addc(&b, 'p');
	if (query_len) {
		keel_buf_adds(&b, "?at=");
		for (size_t i = 0; i < query_len; i++)
			keel_buf_addc(&b, 'q');
	}
	keel_buf_adds(&b, " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n");
	if (header_len) {
		keel_buf_adds(&b, "X-Padding: ");
		for (size_t i = 0; i < header_len; i++)
			keel_buf_addc(&b, 'h');
		keel_buf_adds(&b, "\r\n");
	}
	keel_buf_adds(&b, "\r\n");
	raw_request(port, b.data, b.len, r);
	keel_buf_free(&b);
}

static void assert_json_error(const struct resp *r, int status)
{
	assert_status(*r, status);
	assert_non_null(strstr(r->raw, "Content-Type: application/json"));
	assert_true(r->body_len > 0);
	struct keel_json_doc doc;
	struct keel_json_error jerr;
	keel_json_doc_init(&doc);
	assert_int_equal(keel_json_parse(&doc, r->body, r->body_len, &jerr), 0);
	const struct keel_json *e = keel_json_get(doc.root, "error", 5);
	assert_non_null(e);
	assert_int_equal(e->type, KEEL_JSON_STRING);
	keel_json_doc_free(&doc);
}

/* The first "recorded_at" of a history ?changes=1 answer, after `nth`
 * earlier ones, into buf; its microseconds into *t. */
static void nth_recorded_at(const char *body, int nth, char *buf, size_t size, int64_t *t)
{
	const char *p = body;
	for (int i = 0; i <= nth; i++) {
		p = strstr(p, "\"recorded_at\":\"");
		assert_non_null(p);
		p += 15;
	}
	size_t len = (size_t)(strchr(p, '"') - p);
	assert_true(len < size);
	memcpy(buf, p, len);
	buf[len] = 0;
	assert_int_equal(keel_time_parse(buf, len, t, NULL), 0);
}

/* A GET's body is exactly the library's document (and a newline). */
static void assert_body(uint16_t port, const char *path, const char *want)
{
	struct resp r;
	http(port, "GET", path, NULL, NULL, NULL, &r);
	assert_status(r, 200);
	assert_int_equal(r.body_len, strlen(want) + 1);
	assert_memory_equal(r.body, want, strlen(want));
	resp_free(&r);
}

/* Transaction time over HTTP (docs/http.md): after a late event, every
 * read with known_at= the moment before it answers as Keel did then,
 * exactly as the library does; history?changes=1 lists both recordings;
 * bad values are 400 JSON errors, as for at=. */
static void known_at_reads_sqlite(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "sqlite", false);
	fx_start(&f);
	char *evs[3] = {
		event("tenant-a", "e-1", "V", "available", 0),
		event("tenant-a", "e-2", "V", "in_service", 10),
		event("tenant-a", "e-3", "V", "maintenance", 5), /* late, alone */
	};
	char *batch = join(evs, 2, true);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_BATCH, batch), 200);
	free(batch);
	struct resp r;
	http(f.port, "GET", "/v1/tenants/tenant-a/entities/vehicle:V/history?predicate=status&changes=1",
	     NULL, NULL, NULL, &r);
	assert_status(r, 200);
	char r1[KEEL_TIME_BUFSZ], r2[KEEL_TIME_BUFSZ];
	int64_t t1, t2;
	nth_recorded_at(r.body, 0, r1, sizeof r1, &t1);
	resp_free(&r);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_ONE, evs[2]), 200);
	free_all(evs, 3);
	char *later = event("tenant-b", "e-4", "W", "available", 0); /* a tenant after r1 */
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_ONE, later), 200);
	free(later);

	struct keel_store *s = NULL;
	assert_int_equal(keel_store_open(f.url, &s, NULL), 0);
	int64_t at;
	assert_int_equal(keel_time_parse("2024-05-01T10:07:00Z", 20, &at, NULL), 0);
	const struct keel_read_options then = {.size = sizeof then, .at_set = true, .at = at,
					       .known_at_set = true, .known_at = t1};
	const struct keel_read_options changes = {.size = sizeof changes, .changes = true};
	char path[512], *want = NULL;

	/* Now: the late event holds at 10:07. */
	assert_int_equal(keel_show(s, "tenant-a", "vehicle:V", KEEL_TEST_AT(at), &want), 0);
	assert_non_null(strstr(want, "\"status\":{\"value\":\"maintenance\""));
	free(want);
	/* As known at r1: what was said before it arrived. */
	assert_int_equal(keel_show(s, "tenant-a", "vehicle:V", &then, &want), 0);
	assert_non_null(strstr(want, "\"status\":{\"value\":\"available\",\"valid_from\":"
				     "\"2024-05-01T10:00:00Z\",\"valid_to\":\"2024-05-01T10:10:00Z\""));
	snprintf(path, sizeof path,
		 "/v1/tenants/tenant-a/entities/vehicle:V?at=2024-05-01T10:07:00Z&known_at=%s", r1);
	assert_body(f.port, path, want);
	free(want);
	assert_int_equal(keel_why(s, "tenant-a", "vehicle:V", "status", &then, &want), 0);
	assert_non_null(strstr(want, "\"event\":{\"source\":\"test\",\"id\":\"e-1\""));
	snprintf(path, sizeof path,
		 "/v1/tenants/tenant-a/entities/vehicle:V/why?predicate=status"
		 "&at=2024-05-01T10:07:00Z&known_at=%s", r1);
	assert_body(f.port, path, want);
	free(want);
	assert_int_equal(keel_history(s, "tenant-a", "vehicle:V", NULL, &then, &want), 0);
	assert_null(strstr(want, "maintenance"));
	snprintf(path, sizeof path, "/v1/tenants/tenant-a/entities/vehicle:V/history?known_at=%s",
		 r1);
	assert_body(f.port, path, want);
	free(want);
	assert_int_equal(keel_stats(s, "tenant-a", &then, &want), 0);
	assert_non_null(strstr(want, "\"events\":2"));
	snprintf(path, sizeof path, "/v1/tenants/tenant-a/stats?known_at=%s", r1);
	assert_body(f.port, path, want);
	free(want);
	/* The tenants list: tenant-b was recorded after r1, and before
	 * anything was recorded there were none. */
	const struct keel_read_options known = {.size = sizeof known, .known_at_set = true,
						.known_at = t1};
	assert_int_equal(keel_tenants(s, NULL, NULL, &known, &want), 0);
	char expect[160];
	snprintf(expect, sizeof expect, "{\"known_at\":\"%s\",\"tenants\":[\"tenant-a\"]}", r1);
	assert_string_equal(want, expect);
	free(want);
	/* GET /v1/tenants answers keel_tenants_page's pages. */
	assert_int_equal(keel_tenants_page(s, NULL, NULL, NULL, &known, &want), 0);
	snprintf(expect, sizeof expect,
		 "{\"known_at\":\"%s\",\"tenants\":[\"tenant-a\"],\"next\":null}", r1);
	assert_string_equal(want, expect);
	snprintf(path, sizeof path, "/v1/tenants?known_at=%s", r1);
	assert_body(f.port, path, want);
	free(want);
	assert_body(f.port, "/v1/tenants",
		    "{\"tenants\":[\"tenant-a\",\"tenant-b\"],\"next\":null}");
	assert_body(f.port, "/v1/tenants?limit=1",
		    "{\"tenants\":[\"tenant-a\"],\"next\":\"dGVuYW50LWE\"}");
	assert_body(f.port, "/v1/tenants?limit=1&cursor=dGVuYW50LWE",
		    "{\"tenants\":[\"tenant-b\"],\"next\":null}");
	assert_body(f.port, "/v1/tenants?known_at=2020-01-01T00:00:00Z",
		    "{\"known_at\":\"2020-01-01T00:00:00Z\",\"tenants\":[],\"next\":null}");
	const struct keel_read_options valid = {.size = sizeof valid, .at_set = true, .at = at};
	assert_int_equal(keel_tenants(s, NULL, NULL, &valid, &want), KEEL_EINVAL);

	/* The changes: e-1, e-2 at r1, then e-3 later, shortening e-1's row. */
	assert_int_equal(keel_history(s, "tenant-a", "vehicle:V", "status", &changes, &want), 0);
	nth_recorded_at(want, 1, r2, sizeof r2, &t2);
	assert_string_equal(r2, r1);
	nth_recorded_at(want, 2, r2, sizeof r2, &t2);
	assert_true(t2 > t1);
	assert_non_null(strstr(want, "\"asserted_by\":" TEST_REF("e-3") ",\"value\":\"maintenance\","
				     "\"valid_from\":\"2024-05-01T10:05:00Z\",\"valid_to\":"
				     "\"2024-05-01T10:10:00Z\",\"closed_by\":" TEST_REF("e-2") ",\"shortened\":"
				     "{\"asserted_by\":" TEST_REF("e-1") ",\"valid_from\":\"2024-05-01T10:00:00Z\","
				     "\"valid_to_before\":\"2024-05-01T10:10:00Z\",\"valid_to_after\":"
				     "\"2024-05-01T10:05:00Z\"}}"));
	assert_body(f.port,
		    "/v1/tenants/tenant-a/entities/vehicle:V/history?predicate=status&changes=1",
		    want);
	assert_body(f.port,
		    "/v1/tenants/tenant-a/entities/vehicle:V/history?predicate=status&changes=true",
		    want);
	free(want);
	keel_store_close(s);

	/* Bad values, and a time on a read that does not take it (which
	 * would otherwise be ignored: the present answered for the past):
	 * 400 in JSON, saying which parameter. */
	static const struct {
		const char *path, *error;
	} bad[] = {
	    {"/v1/tenants/tenant-a/entities/vehicle:V?known_at=yesterday",
	     "parameter \\\"known_at\\\": not an RFC 3339 timestamp"},
	    {"/v1/tenants/tenant-a/entities/vehicle:V/why?predicate=status&known_at=2024-02-30T00:00:00Z",
	     "parameter \\\"known_at\\\": "},
	    {"/v1/tenants/tenant-a/entities/vehicle:V/history?known_at=",
	     "parameter \\\"known_at\\\": "},
	    {"/v1/tenants/tenant-a/stats?known_at=soon", "parameter \\\"known_at\\\": "},
	    {"/v1/tenants?known_at=soon", "parameter \\\"known_at\\\": "},
	    {"/v1/tenants?at=2020-01-01T00:00:00Z",
	     "parameter \\\"at\\\": only show, why, entities and search take it"},
	    {"/v1/tenants/tenant-a/stats?at=2020-01-01T00:00:00Z",
	     "parameter \\\"at\\\": only show, why, entities and search take it"},
	    {"/v1/tenants/tenant-a/entities/vehicle:V/history?at=now",
	     "parameter \\\"at\\\": only show, why, entities and search take it"},
	    {"/v1/tenants/tenant-a/entities/vehicle:V/history?changes=maybe",
	     "parameter \\\"changes\\\": "},
	    {"/v1/tenants/tenant-a/entities/vehicle:V?changes=1", "parameter \\\"changes\\\": "},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		http(f.port, "GET", bad[i].path, NULL, NULL, NULL, &r);
		assert_json_error(&r, 400);
		if (!strstr(r.body, bad[i].error))
			fail_msg("%s: %s", bad[i].path, r.body);
		resp_free(&r);
	}
	/* Before anything was recorded the entity was unknown. */
	http(f.port, "GET", "/v1/tenants/tenant-a/entities/vehicle:V?known_at=2020-01-01T00:00:00Z",
	     NULL, NULL, NULL, &r);
	assert_json_error(&r, 404);
	assert_non_null(strstr(r.body, "as known at 2020-01-01T00:00:00Z"));
	resp_free(&r);
	fx_stop(&f);
}

/* A request line or header block too long is answered by Keel, in JSON
 * (414, 431), not with libmicrohttpd's HTML page; just under the limits
 * the request is served as usual. */
static void oversized_heads_answer_json(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "memory", false);
	fx_start(&f);
	struct resp r;
	big_get(f.port, 7000, 0, 15000, &r);
	assert_json_error(&r, 404); /* served: no such entity */
	resp_free(&r);
	big_get(f.port, 20000, 0, 0, &r);
	assert_json_error(&r, 414);
	assert_non_null(strstr(r.body, "request target"));
	resp_free(&r);
	big_get(f.port, 10, 20000, 0, &r);
	assert_json_error(&r, 414);
	resp_free(&r);
	big_get(f.port, 10, 0, 40000, &r);
	assert_json_error(&r, 431);
	assert_non_null(strstr(r.body, "header fields"));
	resp_free(&r);
	/* Many small headers count together. */
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_adds(&b, "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n");
	for (int i = 0; i < 400; i++)
		keel_buf_addf(&b, "X-H%d: %060d\r\n", i, i);
	keel_buf_adds(&b, "\r\n");
	raw_request(f.port, b.data, b.len, &r);
	keel_buf_free(&b);
	assert_json_error(&r, 431);
	resp_free(&r);
	/* Counted among the answers. */
	http(f.port, "GET", "/metrics", NULL, NULL, NULL, &r);
	assert_int_equal(metric(r.body, "keel_http_responses_total{code=\"414\"}"), 2);
	assert_int_equal(metric(r.body, "keel_http_responses_total{code=\"431\"}"), 2);
	resp_free(&r);
	fx_stop(&f);
}

/* /healthz reads the store: a SQLite database deleted under the running
 * server (which would go on writing into the unlinked file, lost at the
 * next start) answers 503 in JSON, with the cause in the log only. */
static void healthz_checks_the_store(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "sqlite", false);
	char logpath[600];
	snprintf(logpath, sizeof logpath, "%s/server.log", f.dir);
	FILE *log = fopen(logpath, "w+");
	assert_non_null(log);
	f.o.log = log;
	fx_start(&f);
	struct resp r;
	http(f.port, "GET", "/healthz", NULL, NULL, NULL, &r);
	assert_status(r, 200);
	assert_string_equal(r.body, "{\"status\":\"ok\"}\n");
	resp_free(&r);

	char db[600];
	snprintf(db, sizeof db, "%s/keel.db", f.dir);
	assert_int_equal(unlink(db), 0);
	http(f.port, "GET", "/healthz", NULL, NULL, NULL, &r);
	assert_json_error(&r, 503);
	assert_non_null(strstr(r.body, "\"status\":\"unavailable\""));
	assert_null(strstr(r.body, f.dir)); /* no path to an anonymous client */
	resp_free(&r);
	http(f.port, "GET", "/metrics", NULL, NULL, NULL, &r);
	assert_int_equal(metric(r.body, "keel_store_errors_total"), 1);
	assert_int_equal(metric(r.body, "keel_http_responses_total{code=\"503\"}"), 1);
	resp_free(&r);
	fx_stop_keep_dir(&f);
	fclose(log);
	char *text = keel_test_read_file(logpath, NULL);
	assert_non_null(strstr(text, "health check failed: sqlite: database file"));
	assert_non_null(strstr(text, "was deleted or replaced since it was opened"));
	free(text);
	keel_test_rmdir(f.dir);
	free(f.dir);
}

/* ------------------------------------------------------- hostile clients */

struct counter_args {
	uint16_t port;
	int requests;
	int ok;
};

static void *good_client(void *arg)
{
	struct counter_args *a = arg;
	for (int i = 0; i < a->requests; i++) {
		int fd = connect_port(a->port);
		if (fd < 0)
			continue;
		const char *req = "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
		send_all(fd, req, strlen(req));
		size_t n;
		char *raw = recv_all(fd, &n);
		close(fd);
		if (n > 12 && strncmp(raw + 9, "200", 3) == 0)
			a->ok++;
		free(raw);
		usleep(20000); /* spreads the requests over the tricklers' 3 s */
	}
	return NULL;
}

/* Clients that trickle header bytes, stall in the middle of a body or
 * hold idle connections do not keep others from being served, and are
 * cut off by the header and request timeouts. */
static void slow_clients_do_not_block_others(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "sqlite", false);
	f.o.threads = 2;
	f.o.header_timeout = 1;
	f.o.request_timeout = 2;
	f.o.idle_timeout = 30;
	f.o.max_per_ip = 200;
	fx_start(&f);
	enum { TRICKLE = 40, IDLE = 40, STALL = 10 };
	int trickle[TRICKLE], idle[IDLE], stall[STALL];
	for (int i = 0; i < TRICKLE; i++)
		trickle[i] = connect_port(f.port);
	for (int i = 0; i < IDLE; i++)
		idle[i] = connect_port(f.port);
	for (int i = 0; i < STALL; i++) {
		stall[i] = connect_port(f.port);
		const char *head = "POST /v1/events HTTP/1.1\r\nHost: t\r\nContent-Type: " CT_ONE
				   "\r\nContent-Length: 100\r\n\r\n{\"id\":";
		send_all(stall[i], head, strlen(head));
	}
	struct counter_args good = {f.port, 60, 0};
	pthread_t th;
	pthread_create(&th, NULL, good_client, &good);

	/* Trickle one byte every 100 ms to every trickler for 3 s: each one
	 * stays under the idle timeout, but not under the header timeout. */
	const char *slow = "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Padding: aaaaaaaaaaaaaaaa"
			   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
	int cut = 0;
	bool dead[TRICKLE] = {false};
	for (int step = 0; step < 30; step++) {
		for (int i = 0; i < TRICKLE; i++) {
			if (dead[i])
				continue;
			if (send(trickle[i], slow + step, 1, MSG_NOSIGNAL) != 1) {
				dead[i] = true;
				cut++;
			}
		}
		usleep(100000); /* the trickle: one byte per 100 ms is the point */
	}
	pthread_join(th, NULL);
	/* Every good request was served (how fast is bench_http's question,
	 * not a test's). */
	assert_int_equal(good.ok, good.requests);
	/* The tricklers were cut off: their socket reads EOF or an error
	 * without an answer ever having been sent. */
	for (int i = 0; i < TRICKLE; i++) {
		char buf[256];
		ssize_t n = recv(trickle[i], buf, sizeof buf, MSG_DONTWAIT);
		if (!dead[i]) {
			assert_true(n <= 0);
			assert_true(n == 0 || errno != EAGAIN);
		}
		close(trickle[i]);
	}
	(void)cut;
	struct resp r;
	http(f.port, "GET", "/metrics", NULL, NULL, NULL, &r);
	assert_true(metric(r.body, "keel_connection_timeouts_total") >= TRICKLE + IDLE + STALL);
	assert_true(metric(r.body, "keel_open_connections") <= 2);
	resp_free(&r);
	for (int i = 0; i < IDLE; i++)
		close(idle[i]);
	for (int i = 0; i < STALL; i++)
		close(stall[i]);
	/* The stalled POSTs never ingested anything. */
	assert_int_equal(http_status(f.port, "GET", "/v1/tenants/tenant-a/stats", NULL, NULL,
				     NULL),
			 404);
	fx_stop(&f);
}

/* A connection from this address is closed without an answer (or not
 * taken at all). Were it served, "Connection: close" ends the answer at
 * once instead of at the idle timeout. */
static bool fifth_is_refused(uint16_t port)
{
	int fd = connect_port(port);
	if (fd < 0)
		return true;
	const char *req = "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
	send_all(fd, req, strlen(req));
	size_t n;
	char *raw = recv_all(fd, &n);
	close(fd);
	struct resp r;
	parse_resp(raw, n, &r);
	bool refused = r.status == 0;
	resp_free(&r);
	return refused;
}

static bool healthz_answers(uint16_t port)
{
	return http_status(port, "GET", "/healthz", NULL, NULL, NULL) == 200;
}

/* One answer to a GET of path on a connection the server keeps open:
 * reads the head and the Content-Length bytes after it, not to the end.
 * The status, or 0. */
static int answer_on_open_connection(int fd, const char *path)
{
	char req[256];
	snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", path);
	if (!send_all(fd, req, strlen(req)))
		return 0;
	size_t cap = 1 << 17, n = 0;
	char *buf = malloc(cap);
	int status = 0;
	while (n < cap - 1) {
		ssize_t r = recv(fd, buf + n, cap - 1 - n, 0);
		if (r <= 0)
			break;
		n += (size_t)r;
		buf[n] = 0;
		const char *end = strstr(buf, "\r\n\r\n");
		const char *cl = strcasestr(buf, "\r\nContent-Length:");
		if (end && cl && n >= (size_t)(end + 4 - buf) + strtoul(cl + 17, NULL, 10)) {
			if (strncmp(buf, "HTTP/1.1 ", 9) == 0)
				status = atoi(buf + 9);
			break;
		}
	}
	free(buf);
	return status;
}

/* Every GET keeps its connection open for the next request, /healthz and
 * the page's files too (answered early, libmicrohttpd would close it). */
static void gets_keep_the_connection(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "memory", false);
	fx_start(&f);
	int fd = connect_port(f.port);
	assert_true(fd >= 0);
	const char *paths[] = {"/healthz", "/ui/", "/ui/assets/keel.css", "/v1/tenants",
			       "/metrics", "/healthz"};
	for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
		assert_int_equal(answer_on_open_connection(fd, paths[i]), 200);
	close(fd);
	assert_int_equal(metric_now(f.port, "keel_connections_total"), 2);
	fx_stop(&f);
}

/* One address may hold max_per_ip connections; the next is closed at
 * once, and others are served once those go away. */
static void per_ip_connection_limit(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "memory", false);
	f.o.max_per_ip = 4;
	fx_start(&f);
	/* Each held connection is answered once and kept open before the next
	 * is made, so the server has counted all four when the fifth comes:
	 * the server accepts on several threads, and connections merely
	 * opened may be counted in any order (a fifth counted before the
	 * fourth would be served and the fourth closed). */
	int held[4];
	for (int i = 0; i < 4; i++) {
		held[i] = connect_port(f.port);
		assert_true(held[i] >= 0);
		assert_int_equal(answer_on_open_connection(held[i], "/healthz"), 200);
	}
	assert_true(fifth_is_refused(f.port));
	for (int i = 0; i < 4; i++)
		close(held[i]);
	assert_true(wait_for(healthz_answers, f.port, 10));
	fx_stop(&f);
}

static bool first_body_claimed(uint16_t port)
{
	return metric_now(port, "keel_buffered_body_bytes") == 3000;
}

static bool bodies_released(uint16_t port)
{
	return metric_now(port, "keel_buffered_body_bytes") == 0;
}

/* Bodies held at once are bounded for all requests together: a second
 * large upload while the first is pending is answered 503 from its
 * headers, and served again once the first is done. */
static void memory_budget_for_bodies(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "memory", false);
	f.o.max_body = 4096;
	f.o.max_buffered = 4096;
	fx_start(&f);
	char head[256];
	snprintf(head, sizeof head,
		 "POST /v1/events HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Type: " CT_NDJSON
		 "\r\nContent-Length: 3000\r\n\r\n");
	int first = connect_port(f.port);
	assert_true(first >= 0);
	assert_true(send_all(first, head, strlen(head)));
	/* The server has read the first one's headers and claimed its body's
	 * bytes: the gauge shows the claim. */
	assert_true(wait_for(first_body_claimed, f.port, 10));
	struct resp r;
	int second = connect_port(f.port);
	assert_true(second >= 0);
	assert_true(send_all(second, head, strlen(head)));
	size_t n;
	char *raw = recv_all(second, &n);
	close(second);
	parse_resp(raw, n, &r);
	assert_status(r, 503);
	resp_free(&r);
	/* The first completes (3000 bytes of blank lines and one event). */
	char *ev = event("tenant-a", "m-1", "V-1", "available", 1);
	char body[3001];
	memset(body, '\n', 3000);
	memcpy(body, ev, strlen(ev));
	body[3000] = 0;
	assert_true(send_all(first, body, 3000));
	raw = recv_all(first, &n);
	close(first);
	parse_resp(raw, n, &r);
	assert_status(r, 200);
	assert_int_equal(json_num(r.body, "accepted"), 1);
	resp_free(&r);
	/* Its bytes are given back once the request ends (just after the
	 * answer): the gauge returns to zero and the same size fits again. */
	assert_true(wait_for(bodies_released, f.port, 10));
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_NDJSON, body), 200);
	free(ev);
	fx_stop(&f);
}

/* --------------------------------------------------------- concurrency */

struct writer_args {
	uint16_t port;
	int id;
	int batches;
	int per_batch;
	int ok;
};

static void *writer_main(void *arg)
{
	struct writer_args *a = arg;
	for (int b = 0; b < a->batches; b++) {
		char **evs = calloc((size_t)a->per_batch, sizeof *evs);
		for (int i = 0; i < a->per_batch; i++) {
			char id[64], veh[32];
			snprintf(id, sizeof id, "w%d-b%d-e%d", a->id, b, i);
			snprintf(veh, sizeof veh, "W%d-%d", a->id, i % 7);
			evs[i] = event("tenant-a", id, veh, (b + i) % 2 ? "moving" : "parked",
				       (b + i) % 60);
		}
		char *body = join(evs, (size_t)a->per_batch, a->id % 2 == 0);
		struct resp r;
		http(a->port, "POST", "/v1/events", NULL, a->id % 2 == 0 ? CT_BATCH : CT_NDJSON,
		     body, &r);
		if (r.status == 200 && json_num(r.body, "accepted") == a->per_batch)
			a->ok++;
		resp_free(&r);
		free(body);
		free_all(evs, (size_t)a->per_batch);
		free(evs);
	}
	return NULL;
}

static void *reader_main(void *arg)
{
	struct writer_args *a = arg;
	for (int i = 0; i < a->batches * 2; i++) {
		char path[128];
		snprintf(path, sizeof path, "/v1/tenants/tenant-a/entities/vehicle:W0-%d",
			 i % 7);
		int st = http_status(a->port, "GET", path, NULL, NULL, NULL);
		if (st == 200 || st == 404)
			a->ok++;
	}
	return NULL;
}

/* Writers and readers at once: every batch goes in whole, every read is
 * answered, and the store holds exactly the events sent. */
static void parallel_writers_and_readers(const char *store)
{
	struct fx f;
	fx_init(&f, store, false);
	fx_start(&f);
	enum { W = 4, R = 2, BATCHES = 15, PER = 40 };
	struct writer_args wa[W + R];
	pthread_t th[W + R];
	for (int i = 0; i < W + R; i++) {
		wa[i] = (struct writer_args){f.port, i, BATCHES, PER, 0};
		pthread_create(&th[i], NULL, i < W ? writer_main : reader_main, &wa[i]);
	}
	for (int i = 0; i < W + R; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < W; i++)
		assert_int_equal(wa[i].ok, BATCHES);
	for (int i = W; i < W + R; i++)
		assert_int_equal(wa[i].ok, BATCHES * 2);
	struct resp r;
	http(f.port, "GET", "/v1/tenants/tenant-a/stats", NULL, NULL, NULL, &r);
	assert_status(r, 200);
	assert_int_equal(json_num(r.body, "events"), W * BATCHES * PER);
	resp_free(&r);
	fx_stop(&f);
}

static void parallel_writers_and_readers_memory(void **state)
{
	(void)state;
	parallel_writers_and_readers("memory");
}

static void parallel_writers_and_readers_sqlite(void **state)
{
	(void)state;
	parallel_writers_and_readers("sqlite");
}

/* ------------------------------------------------------------ group commit */

struct post_args {
	uint16_t port;
	const char *ctype;
	char *body;
	struct resp r;
};

static void *post_main(void *arg)
{
	struct post_args *a = arg;
	http(a->port, "POST", "/v1/events", NULL, a->ctype, a->body, &a->r);
	return NULL;
}

/* Waits until the writer holds n POSTs (queued, or in the batch being
 * written), as /metrics shows; false after 4 s (the store's busy timeout
 * is 5 s). */
static bool wait_writer_requests(uint16_t port, long n)
{
	for (int i = 0; i < 400; i++) {
		struct resp r;
		http(port, "GET", "/metrics", NULL, NULL, NULL, &r);
		long v = metric(r.body, "keel_writer_requests");
		resp_free(&r);
		if (v == n)
			return true;
		usleep(10000);
	}
	return false;
}

/* Holds SQLite's write lock from a connection of the test's own, runs
 * sql inside that transaction, and posts one event (tenant-a, a-0) that
 * the writer then waits with in BEGIN IMMEDIATE. */
static sqlite3 *writer_held(struct fx *f, const char *sql, pthread_t *th, struct post_args *a)
{
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(f->url + 7, &db), SQLITE_OK);
	/* The writer may be folding while idle (a short transaction): wait
	 * for it as any other connection would. */
	sqlite3_busy_timeout(db, 5000);
	assert_int_equal(sqlite3_exec(db, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
	if (sql)
		assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	*a = (struct post_args){f->port, CT_ONE, event("tenant-a", "a-0", "V-0", "parked", 0),
				{0}};
	pthread_create(th, NULL, post_main, a);
	assert_true(wait_writer_requests(f->port, 1));
	/* A moment for the writer to take it off its queue, so that what
	 * comes now waits behind it rather than joining its batch: nothing
	 * shows the writer waiting in BEGIN IMMEDIATE, and the cases that
	 * count batches would fail, not pass, if the moment were too short. */
	usleep(100000);
	return db;
}

/* Counts occurrences of needle in hay. */
static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

#define NO_CONFLICTS "],\"conflicts\":[]}\n"
#define ANSWER(ev, acc, dup, conf, unh)                                                \
	"{\"events\":" #ev ",\"accepted\":" #acc ",\"duplicates\":" #dup                  \
	",\"conflicting\":" #conf ",\"unhandled\":" #unh ",\"rejected\":["

/* Concurrent POSTs gathered into one batch: each is answered with exactly
 * its own counts and its own rejects (indexes its own), the batch is one
 * transaction (metrics: one batch of all of them), and the store holds
 * what the answers say. While the writer waits for a lock held here, the
 * POSTs queue up; released, they go in as one batch. */
static void concurrent_posts_get_their_own_answers(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "sqlite", false);
	fx_start(&f);
	/* Logged beforehand: p-1 and p-2. */
	char *p1 = event("tenant-a", "p-1", "V-1", "parked", 1);
	char *p2 = event("tenant-a", "p-2", "V-1", "moving", 2);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_ONE, p1), 200);
	assert_int_equal(http_status(f.port, "POST", "/v1/events", NULL, CT_ONE, p2), 200);

	pthread_t tha;
	struct post_args a0;
	sqlite3 *db = writer_held(&f, NULL, &tha, &a0);

	enum { N = 10 };
	char unhandled[512];
	snprintf(unhandled, sizeof unhandled,
		 "{\"specversion\":\"1.0\",\"id\":\"u-1\",\"tenant\":\"tenant-a\","
		 "\"type\":\"fleet.vehicle.teleported\",\"source\":\"test\","
		 "\"time\":\"2024-05-01T10:05:00Z\",\"data\":{}}");
	char *b3[3] = {event("tenant-a", "g-3", "V-3", "parked", 3),
		       event("tenant-a", "b-2", "V-3", "parked", 99), /* bad time */
		       event("tenant-a", "p-1", "V-1", "parked", 1)};
	char *nd[2] = {event("tenant-a", "b-3", "V-4", "parked", 99),
		       event("tenant-a", "g-4", "V-4", "moving", 4)};
	struct post_args pa[N] = {
		{f.port, CT_ONE, event("tenant-a", "g-1", "V-2", "parked", 5), {0}},
		{f.port, CT_ONE, event("tenant-b", "g-2", "V-2", "parked", 5), {0}},
		{f.port, CT_ONE, event("tenant-a", "d-1", "V-5", "moving", 6), {0}},
		{f.port, CT_ONE, event("tenant-a", "d-1", "V-5", "moving", 6), {0}},
		{f.port, CT_ONE, event("tenant-a", "p-1", "V-1", "parked", 1), {0}},
		{f.port, CT_ONE, event("tenant-a", "p-2", "V-1", "broken", 2), {0}},
		{f.port, CT_ONE, event("tenant-a", "b-1", "V-6", "parked", 99), {0}},
		{f.port, CT_ONE, strdup(unhandled), {0}},
		{f.port, CT_BATCH, join(b3, 3, true), {0}},
		{f.port, CT_NDJSON, join(nd, 2, false), {0}},
	};
	pthread_t th[N];
	for (int i = 0; i < N; i++)
		pthread_create(&th[i], NULL, post_main, &pa[i]);
	assert_true(wait_writer_requests(f.port, 1 + N));
	assert_int_equal(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	pthread_join(tha, NULL);
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);

	assert_status(a0.r, 200);
	assert_string_equal(a0.r.body, ANSWER(1, 1, 0, 0, 0) NO_CONFLICTS);
	for (int i = 0; i < 2; i++) {
		assert_status(pa[i].r, 200);
		assert_string_equal(pa[i].r.body, ANSWER(1, 1, 0, 0, 0) NO_CONFLICTS);
	}
	/* The same id twice in one batch: the first is taken, whichever. */
	assert_status(pa[2].r, 200);
	assert_status(pa[3].r, 200);
	bool first = json_num(pa[2].r.body, "accepted") == 1;
	assert_string_equal(pa[first ? 2 : 3].r.body, ANSWER(1, 1, 0, 0, 0) NO_CONFLICTS);
	assert_string_equal(pa[first ? 3 : 2].r.body, ANSWER(1, 0, 1, 0, 0) NO_CONFLICTS);
	assert_status(pa[4].r, 200);
	assert_string_equal(pa[4].r.body, ANSWER(1, 0, 1, 0, 0) NO_CONFLICTS);
	assert_status(pa[5].r, 200);
	/* p-2 with another body: listed with the logged event's seq */
	assert_string_equal(pa[5].r.body,
			    ANSWER(1, 0, 1, 1, 0) "],\"conflicts\":[{\"index\":0,\"source\":"
						  "\"test\",\"id\":\"p-2\",\"error\":\"conflicting "
						  "duplicate: its envelope differs from that of "
						  "the event already in the store (seq 2)\"}]}\n");
	/* A single rejected event: 422, its own index, id and error. */
	assert_status(pa[6].r, 422);
	assert_non_null(strstr(pa[6].r.body, ANSWER(1, 0, 0, 0, 0) "{\"index\":0,\"id\":\"b-1\","
							       "\"error\":\"index 0: event \\\"b-1\\\""));
	assert_int_equal(count_of(pa[6].r.body, "\"index\""), 1);
	assert_status(pa[7].r, 200);
	assert_string_equal(pa[7].r.body, ANSWER(1, 1, 0, 0, 1) NO_CONFLICTS);
	assert_status(pa[8].r, 200);
	assert_non_null(strstr(pa[8].r.body, ANSWER(3, 1, 1, 0, 0) "{\"index\":1,\"id\":\"b-2\","
							       "\"error\":\"index 1: event \\\"b-2\\\""));
	assert_int_equal(count_of(pa[8].r.body, "\"index\""), 1);
	assert_status(pa[9].r, 200);
	assert_non_null(strstr(pa[9].r.body, ANSWER(2, 1, 0, 0, 0) "{\"index\":0,\"id\":\"b-3\","));
	assert_int_equal(count_of(pa[9].r.body, "\"index\""), 1);

	/* p-1, p-2 one batch each, a-0 alone, then all N in one batch. */
	struct resp r;
	http(f.port, "GET", "/metrics", NULL, NULL, NULL, &r);
	assert_int_equal(metric(r.body, "keel_batch_duration_seconds_count"), 4);
	assert_int_equal(metric(r.body, "keel_batch_requests_total"), 3 + N);
	assert_int_equal(metric(r.body, "keel_writer_requests"), 0);
	assert_int_equal(metric(r.body, "keel_events_total{outcome=\"accepted\"}"), 3 + 5);
	assert_int_equal(metric(r.body, "keel_events_total{outcome=\"unhandled\"}"), 1);
	assert_int_equal(metric(r.body, "keel_events_total{outcome=\"duplicate\"}"), 3);
	assert_int_equal(metric(r.body, "keel_events_total{outcome=\"conflicting\"}"), 1);
	assert_int_equal(metric(r.body, "keel_events_total{outcome=\"rejected\"}"), 3);
	resp_free(&r);

	keel_server_stop(f.srv);
	struct keel_store *s = NULL;
	assert_int_equal(keel_store_open(f.url, &s, NULL), 0);
	char *dump = keel_test_dump(s, "tenant-a");
	assert_int_equal(count_of(dump, "{\"type\":\"event\""), 8);
	const char *in[] = {"a-0", "p-1", "p-2", "g-1", "d-1", "u-1", "g-3", "g-4"};
	for (size_t i = 0; i < 8; i++) {
		char key[64];
		snprintf(key, sizeof key,
			 "\"type\":\"event\",\"tenant\":\"tenant-a\",\"source\":\"test\",\"id\":\"%s\"",
			 in[i]);
		assert_int_equal(count_of(dump, key), 1);
	}
	assert_null(strstr(dump, "\"b-"));
	/* p-2 kept its first envelope. */
	assert_null(strstr(dump, "broken"));
	free(dump);
	dump = keel_test_dump(s, "tenant-b");
	assert_int_equal(count_of(dump, "{\"type\":\"event\""), 1);
	assert_non_null(strstr(dump, "\"id\":\"g-2\""));
	free(dump);
	keel_store_close(s);

	for (int i = 0; i < N; i++) {
		resp_free(&pa[i].r);
		free(pa[i].body);
	}
	resp_free(&a0.r);
	free(a0.body);
	free(p1);
	free(p2);
	free_all(b3, 3);
	free_all(nd, 2);
	keel_test_rmdir(f.dir);
	free(f.dir);
}

/* A store error in a batch of several POSTs (a trigger added here fails
 * the insert of the event "poison") answers every POST of the batch with
 * the same 500, writes nothing of any of them, and leaves the server
 * working: sent again without the trigger, they all go in. */
static void store_error_fails_the_whole_group(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "sqlite", false);
	fx_start(&f);
	pthread_t tha;
	struct post_args a0;
	sqlite3 *db = writer_held(&f,
				  "CREATE TRIGGER poison BEFORE INSERT ON events "
				  "WHEN NEW.id = 'poison' BEGIN "
				  "SELECT RAISE(ABORT, 'injected failure'); END",
				  &tha, &a0);
	enum { N = 6 };
	char *b[2] = {event("tenant-c", "c-5", "V-5", "parked", 5),
		      event("tenant-c", "c-6", "V-6", "parked", 99)};
	struct post_args pa[N] = {
		{f.port, CT_ONE, event("tenant-c", "c-1", "V-1", "parked", 1), {0}},
		{f.port, CT_ONE, event("tenant-c", "c-2", "V-2", "parked", 2), {0}},
		{f.port, CT_ONE, event("tenant-c", "poison", "V-3", "parked", 3), {0}},
		{f.port, CT_ONE, event("tenant-b", "c-3", "V-3", "parked", 3), {0}},
		{f.port, CT_ONE, event("tenant-c", "c-4", "V-4", "parked", 99), {0}},
		{f.port, CT_BATCH, join(b, 2, true), {0}},
	};
	pthread_t th[N];
	for (int i = 0; i < N; i++)
		pthread_create(&th[i], NULL, post_main, &pa[i]);
	assert_true(wait_writer_requests(f.port, 1 + N));
	assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	pthread_join(tha, NULL);
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);

	/* a-0 was a batch of its own, before. */
	assert_status(a0.r, 200);
	assert_int_equal(json_num(a0.r.body, "accepted"), 1);
	for (int i = 0; i < N; i++) {
		assert_status(pa[i].r, 500);
		assert_string_equal(pa[i].r.body, pa[0].r.body);
	}
	assert_non_null(strstr(pa[0].r.body, "nothing was ingested"));
	assert_int_equal(http_status(f.port, "GET", "/v1/tenants/tenant-c/stats", NULL, NULL,
				     NULL),
			 404);
	assert_int_equal(http_status(f.port, "GET", "/v1/tenants/tenant-b/stats", NULL, NULL,
				     NULL),
			 404);
	struct resp r;
	http(f.port, "GET", "/metrics", NULL, NULL, NULL, &r);
	assert_int_equal(metric(r.body, "keel_batch_duration_seconds_count"), 2);
	assert_int_equal(metric(r.body, "keel_store_errors_total"), 1);
	assert_int_equal(metric(r.body, "keel_http_responses_total{code=\"500\"}"), N);
	assert_int_equal(metric(r.body, "keel_events_total{outcome=\"accepted\"}"), 1);
	assert_int_equal(metric(r.body, "keel_events_total{outcome=\"rejected\"}"), 0);
	resp_free(&r);

	/* Sending them again is safe: they go in, once. */
	assert_int_equal(sqlite3_exec(db, "DROP TRIGGER poison", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	for (int i = 0; i < N; i++) {
		http(f.port, "POST", "/v1/events", NULL, pa[i].ctype, pa[i].body, &r);
		assert_status(r, i == 4 ? 422 : 200);
		assert_int_equal(json_num(r.body, "accepted"), i == 4 ? 0 : 1);
		resp_free(&r);
	}
	http(f.port, "GET", "/v1/tenants/tenant-c/stats", NULL, NULL, NULL, &r);
	assert_status(r, 200);
	assert_int_equal(json_num(r.body, "events"), 4);
	resp_free(&r);

	for (int i = 0; i < N; i++) {
		resp_free(&pa[i].r);
		free(pa[i].body);
	}
	resp_free(&a0.r);
	free(a0.body);
	free_all(b, 2);
	fx_stop(&f);
}

/* An answered POST survives the machine (docs/http.md, "Durability"): the
 * writer syncs SQLite's log after each group's commit, before it answers
 * any POST of it; the store counts those syncs (GET /metrics), and each
 * answer finds its sync counted already, one a group however many POSTs
 * it holds (here one alone, a duplicate, then five queued behind a lock). */
static void answers_follow_their_sync(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "sqlite", false);
	fx_start(&f);
	const char *syncs = "keel_sqlite_commit_syncs_total";
	assert_int_equal(metric_now(f.port, syncs), 0);
	char *one[3] = {event("tenant-a", "s-1", "V-1", "parked", 1),
			event("tenant-a", "s-2", "V-2", "parked", 2),
			event("tenant-a", "s-1", "V-1", "parked", 1)};
	for (long i = 0; i < 3; i++) {
		struct resp r;
		http(f.port, "POST", "/v1/events", NULL, CT_ONE, one[i], &r);
		assert_status(r, 200);
		assert_int_equal(json_num(r.body, i == 2 ? "duplicates" : "accepted"), 1);
		resp_free(&r);
		assert_int_equal(metric_now(f.port, syncs), i + 1);
	}
	free_all(one, 3);

	pthread_t tha;
	struct post_args a0;
	sqlite3 *db = writer_held(&f, NULL, &tha, &a0);
	enum { N = 5 };
	struct post_args pa[N];
	pthread_t th[N];
	for (int i = 0; i < N; i++) {
		char id[16];
		snprintf(id, sizeof id, "g-%d", i);
		pa[i] = (struct post_args){f.port, CT_ONE,
					   event("tenant-a", id, "V-3", "moving", 10 + i), {0}};
		pthread_create(&th[i], NULL, post_main, &pa[i]);
	}
	assert_true(wait_writer_requests(f.port, 1 + N));
	assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	pthread_join(tha, NULL);
	assert_status(a0.r, 200);
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		assert_status(pa[i].r, 200);
		assert_int_equal(json_num(pa[i].r.body, "accepted"), 1);
		resp_free(&pa[i].r);
		free(pa[i].body);
	}
	resp_free(&a0.r);
	free(a0.body);
	/* a-0 alone, then the five as one group */
	assert_int_equal(metric_now(f.port, syncs), 5);
	assert_int_equal(metric_now(f.port, "keel_batch_duration_seconds_count"), 5);
	fx_stop(&f);
}

#ifdef KEEL_WITH_MYSQL
/* The writer's connection, killed from another one just before its
 * COMMIT is sent (once). */
static struct keel_store *killer;

static int count_row(void *ud, unsigned ncols, char **row)
{
	(void)ncols;
	(void)row;
	++*(int *)ud;
	return 0;
}

static bool connection_gone(struct keel_store *k, unsigned long id)
{
	char sql[128];
	snprintf(sql, sizeof sql, "SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = %lu",
		 id);
	int rows = 0;
	assert_int_equal(keel_store_mysql_exec(k, sql, count_row, &rows), 0);
	return rows == 0;
}

static void kill_before_commit(struct keel_store *s)
{
	keel_mysql_before_commit = NULL;
	unsigned long id = keel_store_mysql_connection_id(s);
	char sql[64];
	snprintf(sql, sizeof sql, "KILL CONNECTION %lu", id);
	assert_int_equal(keel_store_mysql_exec(killer, sql, NULL, NULL), 0);
	for (int i = 0; i < 500 && !connection_gone(killer, id); i++)
		usleep(10000);
}

/* A COMMIT whose connection is lost may or may not have committed: the
 * POSTs of its group are answered so (500, "unknown"), not "nothing was
 * ingested"; sent again they are ingested once (here the kill came before
 * the COMMIT reached the server: accepted), and again, duplicates. */
static void uncertain_commit_is_answered_so_mysql(void **state)
{
	(void)state;
	const char *fresh = getenv("KEEL_TEST_MYSQL_FRESH");
	if (!fresh || !*fresh) /* before anything is allocated */
		keel_test_skip("no MySQL server: KEEL_TEST_MYSQL_FRESH is unset "
			       "(the mysql_server ctest fixture sets it)");
	struct fx f;
	fx_init(&f, "memory", false);
	FILE *p = popen(fresh, "r");
	assert_non_null(p);
	assert_non_null(fgets(f.url, sizeof f.url, p));
	f.url[strcspn(f.url, "\n")] = 0;
	assert_int_equal(pclose(p), 0);
	fx_start(&f);
	char *err = NULL;
	assert_int_equal(keel_store_open(f.url, &killer, &err), 0);
	char *evs[2] = {event("tenant-a", "u-1", "V-1", "parked", 1),
			event("tenant-a", "u-2", "V-2", "moving", 2)};
	char *batch = join(evs, 2, true);
	keel_mysql_before_commit = kill_before_commit;
	struct resp r;
	http(f.port, "POST", "/v1/events", NULL, CT_BATCH, batch, &r);
	assert_null(keel_mysql_before_commit); /* it ran */
	assert_status(r, 500);
	assert_non_null(strstr(r.body, "whether the batch was ingested is unknown"));
	assert_non_null(strstr(r.body, "sending it again is safe"));
	assert_null(strstr(r.body, "nothing was ingested"));
	resp_free(&r);
	for (int i = 0; i < 2; i++) {
		http(f.port, "POST", "/v1/events", NULL, CT_BATCH, batch, &r);
		assert_status(r, 200);
		assert_int_equal(json_num(r.body, i ? "duplicates" : "accepted"), 2);
		resp_free(&r);
	}
	assert_int_equal(metric_now(f.port, "keel_store_errors_total"), 1);
	keel_store_close(killer);
	killer = NULL;
	free(batch);
	free_all(evs, 2);
	fx_stop(&f);
}
#endif

/* ---------------------------------------------------------- graceful stop */

/* The server has read the POST's headers and part of its body: the
 * request is under way (a connection merely open, its bytes not yet read
 * by the server, is not a request a stop waits for). */
static bool body_being_read(uint16_t port)
{
	return metric_now(port, "keel_buffered_body_bytes") > 0;
}

/* A stopping server takes no new connection. */
static bool connections_refused(uint16_t port)
{
	int fd = connect_port(port);
	if (fd < 0)
		return true;
	close(fd);
	return false;
}

static void *stop_main(void *arg)
{
	keel_server_stop(arg);
	return NULL;
}

/* A stop while a batch is being sent: no new connections are taken, the
 * batch under way is finished and answered, and it is all in the store. */
/* Whether the method (upper case) is one of the tokens of allow. */
static bool allow_has(const char *allow, const char *method)
{
	size_t m = strlen(method);
	for (const char *p = allow; *p;) {
		size_t l = strcspn(p, ",");
		if (l == m && strncmp(p, method, m) == 0)
			return true;
		p += l;
		while (*p == ',' || *p == ' ')
			p++;
	}
	return false;
}

/* The router's table (src/http/routes.c), through which every request
 * finds its handler, is the OpenAPI document's paths (docs/openapi.json,
 * the one served at /v1/openapi.json), both ways: every path of the
 * document is a route taking exactly the methods the document lists, and
 * every route is in the document. tests/http_openapi.sh checks the
 * document against what the running server answers. */
static void routes_are_the_openapi_document(void **state)
{
	(void)state;
	char path[4200];
	snprintf(path, sizeof path, "%s/docs/openapi.json", KEEL_SOURCE_DIR);
	size_t len = 0;
	char *text = keel_test_read_file(path, &len);
	assert_non_null(text);
	struct keel_json_doc doc;
	struct keel_json_error jerr;
	keel_json_doc_init(&doc);
	assert_int_equal(keel_json_parse(&doc, text, len, &jerr), 0);
	const struct keel_json *info = keel_json_get(doc.root, "info", 4);
	const struct keel_json *version = info ? keel_json_get(info, "version", 7) : NULL;
	assert_non_null(version);
	assert_int_equal(version->len, strlen(keel_version()));
	assert_memory_equal(version->str, keel_version(), version->len);
	const struct keel_json *paths = keel_json_get(doc.root, "paths", 5);
	assert_non_null(paths);
	static const char *const methods[] = {"get",	 "head",  "post",  "put",
					      "delete", "patch", "options", "trace"};
	size_t npaths = 0;
	for (const struct keel_json *p = paths->child; p; p = p->next, npaths++) {
		const struct keel_http_route *r = NULL;
		for (size_t i = 0; i < keel_http_nroutes && !r; i++)
			if (strlen(keel_http_routes[i].path) == p->key_len &&
			    memcmp(keel_http_routes[i].path, p->key, p->key_len) == 0)
				r = &keel_http_routes[i];
		if (!r)
			fail_msg("the document's path %.*s is no route", (int)p->key_len, p->key);
		for (size_t k = 0; k < sizeof methods / sizeof methods[0]; k++) {
			char upper[16];
			size_t n = strlen(methods[k]);
			for (size_t i = 0; i <= n; i++)
				upper[i] = (char)(methods[k][i] >= 'a' ? methods[k][i] - 32 : methods[k][i]);
			bool in_doc = keel_json_get(p, methods[k], n) != NULL;
			if (in_doc != allow_has(r->allow, upper))
				fail_msg("%s %s: %s the document, %s the route (%s)", upper, r->path,
					 in_doc ? "in" : "not in", in_doc ? "not taken by" : "taken by",
					 r->allow);
		}
	}
	/* every route once, so as many routes as paths */
	for (size_t i = 0; i < keel_http_nroutes; i++)
		for (size_t j = i + 1; j < keel_http_nroutes; j++)
			assert_string_not_equal(keel_http_routes[i].path, keel_http_routes[j].path);
	assert_int_equal(npaths, keel_http_nroutes);
	keel_json_doc_free(&doc);
	free(text);
}

static void graceful_stop_finishes_batch(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "sqlite", false);
	fx_start(&f);
	enum { N = 500 };
	char *evs[N];
	for (int i = 0; i < N; i++) {
		char id[32];
		snprintf(id, sizeof id, "g-%d", i);
		evs[i] = event("tenant-a", id, "V-1", i % 2 ? "moving" : "parked", i % 60);
	}
	char *body = join(evs, N, true);
	free_all(evs, N);
	size_t blen = strlen(body);
	int fd = connect_port(f.port);
	assert_true(fd >= 0);
	char head[256];
	int h = snprintf(head, sizeof head,
			 "POST /v1/events HTTP/1.1\r\nHost: t\r\nContent-Type: " CT_BATCH
			 "\r\nContent-Length: %zu\r\n\r\n",
			 blen);
	assert_true(send_all(fd, head, (size_t)h));
	assert_true(send_all(fd, body, blen / 2));
	assert_true(wait_for(body_being_read, f.port, 10));

	pthread_t th;
	pthread_create(&th, NULL, stop_main, f.srv);
	/* Stopping: new connections are refused. */
	assert_true(wait_for(connections_refused, f.port, 10));
	assert_true(send_all(fd, body + blen / 2, blen - blen / 2));
	size_t n;
	char *raw = recv_all(fd, &n);
	close(fd);
	struct resp r;
	parse_resp(raw, n, &r);
	assert_status(r, 200);
	assert_int_equal(json_num(r.body, "accepted"), N);
	assert_non_null(strstr(r.raw, "Connection: close"));
	resp_free(&r);
	pthread_join(th, NULL);
	free(body);

	struct keel_store *s = NULL;
	assert_int_equal(keel_store_open(f.url, &s, NULL), 0);
	char *json = NULL;
	assert_int_equal(keel_stats(s, "tenant-a", NULL, &json), 0);
	assert_int_equal(json_num(json, "events"), N);
	free(json);
	keel_store_close(s);
	keel_test_rmdir(f.dir);
	free(f.dir);
}

/* A stop while POSTs wait for the writer (it waits for a lock held
 * here): they are all ingested and answered before the server goes, and
 * the store holds every one. */
static void graceful_stop_answers_queued_posts(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, "sqlite", false);
	fx_start(&f);
	pthread_t tha;
	struct post_args a0;
	sqlite3 *db = writer_held(&f, NULL, &tha, &a0);
	enum { N = 5 };
	struct post_args pa[N];
	pthread_t th[N];
	for (int i = 0; i < N; i++) {
		char id[32];
		snprintf(id, sizeof id, "q-%d", i);
		pa[i] = (struct post_args){f.port, CT_ONE, event("tenant-a", id, "V-1", "parked", i),
					   {0}};
		pthread_create(&th[i], NULL, post_main, &pa[i]);
	}
	assert_true(wait_writer_requests(f.port, 1 + N));
	pthread_t ts;
	pthread_create(&ts, NULL, stop_main, f.srv);
	/* The stop is under way (it refuses connections) before the writer
	 * gets the lock. */
	assert_true(wait_for(connections_refused, f.port, 10));
	assert_int_equal(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	pthread_join(tha, NULL);
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	pthread_join(ts, NULL);
	assert_status(a0.r, 200);
	for (int i = 0; i < N; i++) {
		assert_status(pa[i].r, 200);
		assert_int_equal(json_num(pa[i].r.body, "accepted"), 1);
		assert_non_null(strstr(pa[i].r.raw, "Connection: close"));
		resp_free(&pa[i].r);
		free(pa[i].body);
	}
	resp_free(&a0.r);
	free(a0.body);
	struct keel_store *s = NULL;
	assert_int_equal(keel_store_open(f.url, &s, NULL), 0);
	char *json = NULL;
	assert_int_equal(keel_stats(s, "tenant-a", NULL, &json), 0);
	assert_int_equal(json_num(json, "events"), 1 + N);
	free(json);
	keel_store_close(s);
	keel_test_rmdir(f.dir);
	free(f.dir);
}

const struct CMUnitTest tests[] = {
	cmocka_unit_test(healthz_and_routing),
	cmocka_unit_test(oversized_heads_answer_json),
	cmocka_unit_test(healthz_checks_the_store),
	cmocka_unit_test(method_not_allowed_names_the_path_methods),
	cmocka_unit_test(post_and_read_memory),
	cmocka_unit_test(post_and_read_sqlite),
	cmocka_unit_test(reads_match_library_sqlite),
	cmocka_unit_test(known_at_reads_sqlite),
	cmocka_unit_test(reads_see_every_acknowledged_batch),
	cmocka_unit_test(in_memory_sqlite_is_read_through_the_writer),
	cmocka_unit_test(writer_folds_when_idle),
	cmocka_unit_test(store_error_is_500_and_nothing_written),
	cmocka_unit_test(bad_bodies_memory),
	cmocka_unit_test(bad_bodies_sqlite),
	cmocka_unit_test(tenant_matrix_memory),
	cmocka_unit_test(tenant_matrix_sqlite),
	cmocka_unit_test(loopback_only_without_tokens),
	cmocka_unit_test(tokens_in_clear_only_on_loopback),
	cmocka_unit_test(slow_clients_do_not_block_others),
	cmocka_unit_test(per_ip_connection_limit),
	cmocka_unit_test(gets_keep_the_connection),
	cmocka_unit_test(memory_budget_for_bodies),
	cmocka_unit_test(parallel_writers_and_readers_memory),
	cmocka_unit_test(parallel_writers_and_readers_sqlite),
	cmocka_unit_test(concurrent_posts_get_their_own_answers),
	cmocka_unit_test(store_error_fails_the_whole_group),
	cmocka_unit_test(routes_are_the_openapi_document),
	cmocka_unit_test(answers_follow_their_sync),
#ifdef KEEL_WITH_MYSQL
	cmocka_unit_test(uncertain_commit_is_answered_so_mysql),
#endif
	cmocka_unit_test(graceful_stop_finishes_batch),
	cmocka_unit_test(graceful_stop_answers_queued_posts),
};

KEEL_TEST_MAIN(tests)

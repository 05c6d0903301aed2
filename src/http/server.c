/*
 * server.c - keel serve: the HTTP API of docs/http.md on libmicrohttpd.
 *
 * This file holds the access handler, which routes a request to POST
 * /v1/events (events.c), the read endpoints (reads.c), the page
 * at /ui/ (ui.c), /healthz and /metrics, and starting and stopping the daemon; server.h lists the
 * other files (answers, the per-connection watchdog).
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
#include "server.h"
#include "event/json_write.h"
#include "store/store.h"

#include "options.h"

/* ------------------------------------------------------------- routing */

struct header_count {
	const char *name;
	unsigned n;
};

/* MHD_KeyValueIterator counting the headers of one name (any case). */
static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	(void)kind;
	(void)value;
	struct header_count *hc = cls;
	if (strcasecmp(key, hc->name) == 0)
		hc->n++;
	return MHD_YES;
}

/* A header that may be given once but came more than once: libmicrohttpd
 * would hand over the first and the rest would be ignored, so a request
 * whose meaning depends on which one counts is refused instead (400,
 * docs/http.md), as a repeated ce- header is. True after queueing it. */
static bool repeated_header(struct keel_server *srv, struct MHD_Connection *c,
			    const char *name, enum MHD_Result *ret)
{
	struct header_count hc = {name, 0};
	MHD_get_connection_values(c, MHD_HEADER_KIND, count_header, &hc);
	if (hc.n < 2)
		return false;
	*ret = keel_http_answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
				      "header \"%s\": given %u times; it may be given once",
				      name, hc.n);
	return true;
}

/* Authenticates the request. Returns true with *tok set (NULL when the
 * server has no tokens), or false after queueing a 401. A repeated
 * Authorization was refused before, on every route. */
static bool authenticate(struct keel_server *srv, struct MHD_Connection *c,
			 const struct keel_token_entry **tok, enum MHD_Result *ret)
{
	*tok = NULL;
	if (!srv->auth)
		return true;
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_AUTHORIZATION);
	if (!h || strncasecmp(h, "Bearer ", 7) != 0) {
		*ret = keel_http_answer_error(
		    srv, c, MHD_HTTP_UNAUTHORIZED,
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
		*ret = keel_http_answer_error(srv, c, MHD_HTTP_UNAUTHORIZED,
					      "invalid token");
		return false;
	}
	return true;
}

/* MHD_KeyValueIterator adding one field's bytes as sent: "k=v&" for a
 * query argument, "k: v\r\n" for a header. */
static enum MHD_Result add_field_size(void *cls, enum MHD_ValueKind kind, const char *key,
				      const char *value)
{
	size_t *total = cls;
	*total += strlen(key) + (value ? strlen(value) : 0) +
		  (kind == MHD_GET_ARGUMENT_KIND ? 2 : 4);
	return MHD_YES;
}

/* Keel's own limits on the request line and the headers, below what
 * libmicrohttpd's per-connection memory holds: past that memory
 * libmicrohttpd answers 414 or 431 itself, with an HTML page and no hook
 * to replace it (docs/http.md, "Limits"), so Keel refuses first, in JSON.
 * True after queueing the answer. */
static bool too_large_head(struct keel_server *srv, struct MHD_Connection *c,
			   const char *url, enum MHD_Result *ret)
{
	size_t target = strlen(url);
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_field_size, &target);
	if (target > MAX_REQUEST_TARGET) {
		*ret = keel_http_answer_error(
		    srv, c, MHD_HTTP_URI_TOO_LONG,
		    "request target of about %zu bytes: longer than the maximum of %u bytes",
		    target, MAX_REQUEST_TARGET);
		return true;
	}
	size_t headers = 0;
	MHD_get_connection_values(c, MHD_HEADER_KIND, add_field_size, &headers);
	if (headers > MAX_HEADER_BYTES) {
		*ret = keel_http_answer_error(
		    srv, c, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE,
		    "header fields of %zu bytes: more than the maximum of %u bytes", headers,
		    MAX_HEADER_BYTES);
		return true;
	}
	return false;
}

static bool keel_http_parse_size(const char *s, uint64_t *out)
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

/* See server.h. */
bool keel_http_claim(struct keel_server *srv, struct request *rq, size_t n)
{
	size_t before = atomic_fetch_add(&srv->metrics.buffered, n);
	if (before + n > srv->o.max_buffered) {
		atomic_fetch_sub(&srv->metrics.buffered, n);
		return false;
	}
	rq->claimed += n;
	return true;
}

/* MHD_KeyValueIterator: whether any header's name begins with "ce-". */
static enum MHD_Result find_ce_header(void *cls, enum MHD_ValueKind kind, const char *key,
				      const char *value)
{
	(void)kind;
	(void)value;
	if (strncasecmp(key, "ce-", 3) != 0)
		return MHD_YES;
	*(bool *)cls = true;
	return MHD_NO;
}

/* The content mode of a POST /v1/events, from its Content-Type and
 * headers, as the CloudEvents HTTP binding tells them apart
 * (docs/http.md): the CloudEvents media types and Keel's NDJSON name
 * their mode; any other request carrying ce- headers is binary mode; a
 * plain application/json body is structured mode or a batch. Answers
 * 415 itself (true) when it is none of these. */
static bool content_mode(struct keel_server *srv, struct MHD_Connection *c,
			 struct request *rq, const char *ct, enum MHD_Result *ret)
{
	struct keel_media_type mt = {KEEL_STR_NULL, KEEL_STR_NULL};
	bool parsed = ct && keel_media_type_parse(ct, &mt);
	bool ce_headers = false;
	MHD_get_connection_values(c, MHD_HEADER_KIND, find_ce_header, &ce_headers);
	const char *refusal = NULL;
	if (parsed && mt.type.len >= 23 &&
	    strncasecmp(mt.type.ptr, "application/cloudevents", 23) == 0) {
		if (keel_media_type_is(&mt, "application/cloudevents+json"))
			rq->kind = BODY_SINGLE;
		else if (keel_media_type_is(&mt, "application/cloudevents-batch+json"))
			rq->kind = BODY_BATCH;
		else
			refusal = "an event format Keel does not read (it reads JSON: "
				  "application/cloudevents+json and "
				  "application/cloudevents-batch+json)";
	} else if (parsed && (keel_media_type_is(&mt, "application/x-ndjson") ||
			      keel_media_type_is(&mt, "application/ndjson"))) {
		rq->kind = BODY_NDJSON;
	} else if (ce_headers && (parsed || !ct)) {
		rq->kind = BODY_BINARY;
		rq->binary_json = parsed && keel_media_type_is_json(&mt);
	} else if (parsed && keel_media_type_is(&mt, "application/json")) {
		rq->kind = BODY_JSON;
	} else {
		refusal = ct && !parsed
			      ? "not a media type"
			      : "expected application/cloudevents+json, "
				"application/cloudevents-batch+json, application/json, "
				"application/x-ndjson, or ce- headers (binary content mode)";
	}
	/* Events are JSON, and JSON is UTF-8 (RFC 8259); a binary event's
	 * data that is not JSON is kept as bytes, whatever its charset. */
	bool json_text = rq->kind != BODY_BINARY || rq->binary_json;
	if (!refusal && json_text && !keel_media_type_utf8(&mt)) {
		rq->route = ROUTE_DONE;
		*ret = keel_http_answer_error(
		    srv, c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
		    "content type \"%.*s\": charset \"%.*s\" not supported: JSON is read "
		    "as UTF-8",
		    (int)(mt.type.len > 100 ? 100 : mt.type.len), mt.type.ptr,
		    (int)(mt.charset.len > 40 ? 40 : mt.charset.len), mt.charset.ptr);
		return true;
	}
	if (!refusal)
		return false;
	size_t shown = ct ? strlen(ct) : 0;
	rq->route = ROUTE_DONE;
	*ret = keel_http_answer_error(srv, c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
				      "content type \"%.*s\": %s",
				      (int)(shown > 100 ? 100 : shown), ct ? ct : "", refusal);
	return true;
}

/* First call for POST /v1/events: everything that can be refused before
 * the body is read. */
static enum MHD_Result start_events(struct keel_server *srv, struct MHD_Connection *c,
				    struct request *rq)
{
	const char *ct =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	enum MHD_Result ret = MHD_YES;
	/* The Content-Type chooses the mode, and in binary mode it is the
	 * event's datacontenttype: two of them leave both ambiguous. */
	if (repeated_header(srv, c, MHD_HTTP_HEADER_CONTENT_TYPE, &ret)) {
		rq->route = ROUTE_DONE;
		return ret;
	}
	if (content_mode(srv, c, rq, ct, &ret))
		return ret;
	if (rq->kind == BODY_BINARY && !keel_http_start_binary(srv, c, rq, ct, &ret))
		return ret;
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_LENGTH);
	uint64_t n;
	if (cl && keel_http_parse_size(cl, &n) && n > srv->o.max_body) {
		rq->route = ROUTE_DONE;
		return keel_http_answer_error(
		    srv, c, MHD_HTTP_CONTENT_TOO_LARGE,
		    "body of %llu bytes: larger than the maximum of %zu bytes",
		    (unsigned long long)n, srv->o.max_body);
	}
	if (cl && keel_http_parse_size(cl, &n)) {
		if (!keel_http_claim(srv, rq, (size_t)n)) {
			rq->route = ROUTE_DONE;
			return keel_http_answer_error(
			    srv, c, MHD_HTTP_SERVICE_UNAVAILABLE,
			    "server busy: request bodies in memory at their limit; "
			    "retry later");
		}
		keel_buf_reserve(&rq->body, (size_t)n);
	}
	return MHD_YES;
}

/* The read a read endpoint makes. */
static enum read_kind read_kind_of(enum endpoint ep)
{
	switch (ep) {
	case EP_TENANTS:
		return READ_TENANTS;
	case EP_STATS:
		return READ_STATS;
	case EP_ENTITIES:
		return READ_ENTITIES;
	case EP_SEARCH:
		return READ_SEARCH;
	case EP_HISTORY:
		return READ_HISTORY;
	case EP_WHY:
		return READ_WHY;
	default:
		return READ_SHOW;
	}
}

/* GET (a read) or DELETE (forget) of a read endpoint's path. */
static enum MHD_Result route_get(struct keel_server *srv, struct MHD_Connection *c,
				 const char *url, struct request *rq, bool forget)
{
	const struct keel_token_entry *tok = rq->token;
	const char *seg[KEEL_HTTP_MAX_SEGMENTS];
	size_t len[KEEL_HTTP_MAX_SEGMENTS], n;
	/* the route the first call found: segments 2 and 4 are the tenant
	 * and the subject */
	keel_http_route_find(url, seg, len, &n);
	enum read_kind kind = read_kind_of(rq->endpoint->endpoint);
	if (kind == READ_TENANTS) /* scoped by the token inside */
		return keel_http_handle_read(srv, c, kind, NULL, NULL, tok);
	struct keel_buf tenant, subject;
	keel_buf_init(&tenant);
	keel_buf_init(&subject);
	enum MHD_Result ret;
	if (!keel_http_percent_decode(seg[2], len[2], &tenant) ||
	    (n >= 5 && !keel_http_percent_decode(seg[4], len[4], &subject))) {
		ret = keel_http_answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
					     "path: invalid percent-escape");
		goto out;
	}
	if (srv->o.request_log)
		keel_buf_add(&rq->tenant, tenant.data, tenant.len);
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
		keel_buf_add_json_str(&b, keel_str_make(msg.data, msg.len));
		keel_buf_free(&msg);
		keel_buf_addc(&b, '}');
		ret = keel_http_answer_json(srv, c, MHD_HTTP_FORBIDDEN, &b);
		goto out;
	}
	if (!keel_tenant_name_ok(tenant.data, tenant.len)) {
		ret = keel_http_answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
					     "tenant: not 1-64 bytes of [A-Za-z0-9._-]");
		goto out;
	}
	if (forget)
		ret = keel_http_handle_forget(srv, c, tok, tenant.data, subject.data);
	else
		ret = keel_http_handle_read(srv, c, kind, tenant.data,
					    n >= 5 ? subject.data : NULL, tok);
out:
	keel_buf_free(&tenant);
	keel_buf_free(&subject);
	return ret;
}

/* GET /healthz: whether the store answers a cheap read, on a read handle
 * (so it never waits for the writer's batch on SQL stores). Needs no
 * token, so the cause (paths, SQL errors) goes to the log only. */
static enum MHD_Result handle_healthz(struct keel_server *srv, struct MHD_Connection *c)
{
	char *e = NULL;
	struct keel_store *s = keel_http_reader_get(srv, NULL, &e);
	int rc = s ? keel_store_check(s) : KEEL_ESTORE;
	if (rc)
		keel_http_log(srv, "health check failed: %s",
			      s ? keel_store_errmsg(s) : e ? e : keel_strerror(rc));
	if (s)
		keel_http_reader_put(srv, s);
	free(e);
	if (rc == 0)
		return keel_http_answer_const(srv, c, "{\"status\":\"ok\"}\n");
	atomic_fetch_add(&srv->metrics.store_errors, 1);
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_adds(&b, "{\"status\":\"unavailable\",\"error\":\"store: a read failed "
			  "(details in the server log)\"}");
	return keel_http_answer_json(srv, c, MHD_HTTP_SERVICE_UNAVAILABLE, &b);
}

/* A token scoped to tenants sees their series only (docs/http.md,
 * "Metrics"): the server-wide ones count every tenant's traffic. */
static enum MHD_Result handle_metrics(struct keel_server *srv, struct MHD_Connection *c,
				      const struct keel_token_entry *tok)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_metrics_render(&srv->metrics, tok, &b);
	/* The writer's own counters (SQLite: its background checkpointer),
	 * store-wide, so only for a token that sees every tenant; the store
	 * reads only atomics, so no lock. */
	if (!tok || tok->all)
		keel_store_metrics(srv->writer, &b);
	char *data = b.data;
	size_t len = b.len;
	return keel_http_answer(srv, c, MHD_HTTP_OK, data, len,
				"text/plain; version=0.0.4");
}

static enum MHD_Result keel_http_on_request(void *cls, struct MHD_Connection *c,
					    const char *url, const char *method,
					    const char *version, const char *upload_data,
					    size_t *upload_data_size, void **con_cls)
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
		if (srv->o.request_log) {
			rq->started = keel_http_mono_usec();
			rq->method = keel_xstrdup(method);
			rq->path = keel_xstrdup(url);
			if (rq->conn)
				rq->conn->rq = rq;
		}
		pthread_mutex_lock(&srv->inflight_lock);
		srv->inflight++;
		pthread_mutex_unlock(&srv->inflight_lock);
		keel_http_set_deadline(rq->conn,
				       (int64_t)srv->o.request_timeout * 1000000);

		enum MHD_Result ret = MHD_YES;
		if (too_large_head(srv, c, url, &ret)) {
			rq->route = ROUTE_DONE;
			return ret;
		}
		/* Two Authorization headers: which token would count? Refused
		 * on every route, with or without --tokens, public ones too, so
		 * a request's meaning never depends on the route or the
		 * server's options (docs/http.md). */
		if (repeated_header(srv, c, MHD_HTTP_HEADER_AUTHORIZATION, &ret)) {
			rq->route = ROUTE_DONE;
			return ret;
		}
		const char *seg[KEEL_HTTP_MAX_SEGMENTS];
		size_t len[KEEL_HTTP_MAX_SEGMENTS], nseg;
		const struct keel_http_route *r = keel_http_route_find(url, seg, len, &nseg);
		rq->endpoint = r;
		bool allowed = r && keel_http_route_allows(r, method);
		/* /healthz, the page and the API's description ask for no
		 * token: they carry no data. Like every GET they are answered
		 * when the request is done: libmicrohttpd closes a connection
		 * whose answer was queued on this first call, and a browser or
		 * a health checker would open a new one for each request. */
		if (r && r->public) {
			rq->route = allowed ? ROUTE_PUBLIC : ROUTE_DONE;
			if (allowed)
				return MHD_YES;
			bool ui = r->endpoint == EP_UI || r->endpoint == EP_UI_MOVED ||
				  r->endpoint == EP_UI_ASSET;
			return ui ? keel_http_ui_not_allowed(srv, c, method)
				  : keel_http_answer_not_allowed(srv, c, method, r->allow);
		}
		if (!authenticate(srv, c, &rq->token, &ret)) {
			rq->route = ROUTE_DONE;
			return ret;
		}
		rq->route = ROUTE_DONE;
		if (!r)
			return keel_http_answer_error(srv, c, MHD_HTTP_NOT_FOUND,
						      "no such endpoint");
		if (!allowed)
			return keel_http_answer_not_allowed(srv, c, method, r->allow);
		if (r->endpoint == EP_EVENTS) {
			rq->route = srv->null_mode ? ROUTE_NULL_EVENTS : ROUTE_EVENTS;
			return start_events(srv, c, rq);
		}
		/* An entity's path takes DELETE too: keel forget. */
		rq->route = strcmp(method, MHD_HTTP_METHOD_DELETE) == 0 ? ROUTE_FORGET : ROUTE_READ;
		return MHD_YES;
	}

	if (*upload_data_size) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		if (rq->route == ROUTE_DONE || rq->route == ROUTE_READ ||
		    rq->route == ROUTE_PUBLIC || rq->route == ROUTE_FORGET)
			return MHD_YES; /* a body nobody asked for */
		rq->received += n;
		bool over = rq->received > srv->o.max_body;
		if (!over && rq->received > rq->claimed &&
		    !keel_http_claim(srv, rq, rq->received - rq->claimed))
			over = true;
		if (over) {
			/* No Content-Length (chunked) and too much, for this
			 * request or for all together: the answer cannot be
			 * queued in the middle of a body, so the connection is
			 * closed instead of reading on. */
			if (!rq->too_large)
				keel_metrics_status(&srv->metrics,
						    MHD_HTTP_CONTENT_TOO_LARGE);
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
		return keel_http_handle_events(srv, c, rq);
	case ROUTE_EVENTS_QUEUED:
		return keel_http_answer_events(srv, c, rq);
	case ROUTE_NULL_EVENTS:
		return keel_http_answer_const(
		    srv, c,
		    "{\"events\":0,\"accepted\":0,\"duplicates\":0,"
		    "\"conflicting\":0,\"unhandled\":0,\"rejected\":[]}\n");
	case ROUTE_READ:
		rq->route = ROUTE_DONE;
		if (rq->endpoint->endpoint == EP_METRICS)
			return handle_metrics(srv, c, rq->token);
		return route_get(srv, c, url, rq, false);
	case ROUTE_FORGET:
		rq->route = ROUTE_DONE;
		return route_get(srv, c, url, rq, true);
	case ROUTE_PUBLIC:
		rq->route = ROUTE_DONE;
		if (rq->endpoint->endpoint == EP_HEALTHZ)
			return handle_healthz(srv, c);
		if (rq->endpoint->endpoint == EP_OPENAPI)
			return keel_http_openapi(srv, c);
		return keel_http_ui(srv, c, url);
	case ROUTE_DONE:
		return MHD_YES;
	}
	return MHD_NO;
}

/* ------------------------------------------------------- start and stop */

static bool is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in =
		    (const struct sockaddr_in *)(const void *)sa;
		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 =
		    (const struct sockaddr_in6 *)(const void *)sa;
		if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
			return true;
		return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) &&
		       in6->sin6_addr.s6_addr[12] == 127;
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
	if (!keel_http_parse_size(colon + 1, &port) || port > 65535) {
		keel_buf_addf(err, "listen \"%s\": port: not a number from 0 to 65535",
			      listen);
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

/* Where the server may listen, decided from the options alone: the
 * address parses; TLS needs both files; off loopback, a token file is
 * required, and its tokens may only cross the network in clear when the
 * operator says so (a proxy in front terminating TLS, insecure_http). */
static int check_listen(const struct keel_server_options *so, struct sockaddr_storage *ss,
			socklen_t *sslen, struct keel_buf *err)
{
	const char *listen = so->listen ? so->listen : DEFAULT_LISTEN;
	bool cert = so->tls_cert && *so->tls_cert, key = so->tls_key && *so->tls_key;
	if (cert != key) {
		keel_buf_adds(err, cert ? "--tls-cert without --tls-key: give both or neither"
					: "--tls-key without --tls-cert: give both or neither");
		return KEEL_EINVAL;
	}
	int rc = resolve_listen(listen, ss, sslen, err);
	if (rc)
		return rc;
	if (is_loopback((struct sockaddr *)ss))
		return 0;
	if (!so->token_file) {
		keel_buf_addf(err,
			      "listen \"%s\": without a token file the server listens on "
			      "loopback addresses only (give --tokens FILE)",
			      listen);
		return KEEL_EINVAL;
	}
	if (!cert && !so->insecure_http) {
		keel_buf_addf(err,
			      "listen \"%s\": off loopback, tokens would cross the network "
			      "in clear over plain HTTP; give --tls-cert FILE and --tls-key "
			      "FILE, or --insecure-http when a proxy in front terminates TLS",
			      listen);
		return KEEL_EINVAL;
	}
	return 0;
}

int keel_server_check_options(const struct keel_server_options *o, char **errmsg)
{
	if (errmsg)
		*errmsg = NULL;
	struct keel_server_options opt;
	struct keel_buf err;
	keel_buf_init(&err);
	const char *why = o ? keel_options_copy(&opt, sizeof opt, o) : "no options";
	int rc = KEEL_EINVAL;
	if (why) {
		keel_buf_addf(&err, "keel_server_options: %s", why);
	} else {
		struct sockaddr_storage ss;
		socklen_t sslen = 0;
		rc = check_listen(&opt, &ss, &sslen, &err);
		if (rc == 0) {
			struct keel_metrics m;
			keel_metrics_init(&m);
			rc = keel_metrics_tenants_option(&m, opt.metrics_tenants, &err);
			keel_metrics_free(&m);
		}
	}
	if (rc && errmsg)
		*errmsg = keel_xstrdup(err.data ? err.data : keel_strerror(rc));
	keel_buf_free(&err);
	return rc;
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
	for (size_t i = 0; i < srv->readers.len; i++)
		keel_store_close(srv->readers.items[i]);
	keel_ptrvec_free(&srv->readers);
	for (size_t i = 0; srv->pools && i < srv->map.n; i++) {
		for (size_t j = 0; j < srv->pools[i].len; j++)
			keel_store_close(srv->pools[i].items[j]);
		keel_ptrvec_free(&srv->pools[i]);
	}
	free(srv->pools);
	keel_store_map_free(&srv->map);
	keel_ingest_free(srv->ing);
	keel_publisher_free(srv->pub);
	keel_ptrvec_free(&srv->group.published_by);
	keel_store_close(srv->writer);
	keel_cartridge_free(srv->cartridge);
	keel_tokens_free(&srv->tokens);
	keel_metrics_free(&srv->metrics);
	keel_http_tls_free(srv);
	keel_buf_free(&srv->start_log);
	pthread_mutex_destroy(&srv->start_log_lock);
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

/* keel serve's way, or one of the benchmark's (server_bench.h). */
enum serve_mode {
	SERVE_AS_IS,
	SERVE_DROPPING_EVENTS,
	SERVE_UNSYNCED,
};

static int server_start(const struct keel_server_options *o, enum serve_mode mode,
			struct keel_server **out, char **errmsg);

int keel_server_start(const struct keel_server_options *o, struct keel_server **out,
		      char **errmsg)
{
	return server_start(o, SERVE_AS_IS, out, errmsg);
}

int keel_server_start_dropping_events(const struct keel_server_options *o,
				      struct keel_server **out, char **errmsg)
{
	return server_start(o, SERVE_DROPPING_EVENTS, out, errmsg);
}

int keel_server_start_unsynced(const struct keel_server_options *o, struct keel_server **out,
			       char **errmsg)
{
	return server_start(o, SERVE_UNSYNCED, out, errmsg);
}

/* Starts the daemon, its writer and its watchdog; for the benchmark, in
 * null mode (POST /v1/events answers without ingesting) or unsynced
 * (server_bench.h). */
static int server_start(const struct keel_server_options *o, enum serve_mode mode,
			struct keel_server **out, char **errmsg)
{
	*out = NULL;
	if (errmsg)
		*errmsg = NULL;
	struct keel_server_options opt;
	const char *why = o ? keel_options_copy(&opt, sizeof opt, o) : "no options";
	if (why) {
		if (errmsg) {
			struct keel_buf m;
			keel_buf_init(&m);
			keel_buf_addf(&m, "keel_server_options: %s", why);
			*errmsg = m.data;
		}
		return KEEL_EINVAL;
	}
	struct keel_server *srv = keel_xcalloc(1, sizeof *srv);
	srv->o = opt;
	srv->null_mode = mode == SERVE_DROPPING_EVENTS;
	struct keel_server_options *so = &srv->o;
	if (!so->listen)
		so->listen = DEFAULT_LISTEN;
	if (!so->threads)
		so->threads = DEFAULT_THREADS;
	if (!so->max_body)
		so->max_body = KEEL_DEFAULT_MAX_BODY;
	if (!so->max_line)
		so->max_line = KEEL_DEFAULT_MAX_LINE;
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
		so->max_buffered = KEEL_DEFAULT_MAX_BUFFERED;
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
	pthread_mutex_init(&srv->start_log_lock, NULL);
	atomic_init(&srv->stopping, false);
	keel_metrics_init(&srv->metrics);

	struct keel_buf err;
	keel_buf_init(&err);
	int rc = 0;
	char *e = NULL;

	struct sockaddr_storage ss;
	socklen_t sslen = 0;
	rc = check_listen(so, &ss, &sslen, &err);
	if (rc == 0)
		rc = keel_metrics_tenants_option(&srv->metrics, so->metrics_tenants, &err);
	if (rc)
		goto fail;
	if (so->token_file) {
		rc = keel_tokens_load(so->token_file, &srv->tokens, &err);
		if (rc)
			goto fail;
		srv->auth = true;
	}
	if (so->tls_cert) {
		rc = keel_http_tls_load(srv, &err);
		if (rc)
			goto fail;
	}

	if (so->store_map) {
		/* Reads from each tenant's store; the first of the map also
		 * answers what is asked of "the" store (health, metrics). */
		if (so->store_url || !so->forward) {
			keel_buf_adds(&err, so->store_url
						? "--store and --store-map exclude each other"
						: "--store-map serves reads only: POSTs need "
						  "--forward (events go to the log)");
			rc = KEEL_EINVAL;
			goto fail;
		}
		if ((rc = keel_store_map_read(so->store_map, &srv->map, &err)) != 0)
			goto fail;
		for (size_t i = 0; i < srv->map.nranges; i++)
			if (srv->map.ranges[i].hi + 1 > srv->map_partitions)
				srv->map_partitions = srv->map.ranges[i].hi + 1;
		if ((rc = keel_store_map_check(&srv->map, srv->map_partitions, &err)) != 0)
			goto fail;
		srv->mapped = true;
		srv->pools = keel_xcalloc(srv->map.n, sizeof *srv->pools);
	}
	srv->store_url = keel_xstrdup(srv->mapped ? srv->map.urls[0]
				      : so->store_url && *so->store_url ? so->store_url
									  : keel_store_default_url());
	/* None given: each tenant's recorded one (the ingester's choice). */
	rc = so->cartridge ? keel_cartridge_load(so->cartridge, &srv->cartridge, &e) : 0;
	if (rc) {
		keel_buf_adds(&err, e ? e : keel_strerror(rc));
		goto fail;
	}
	rc = keel_store_open(srv->store_url, &srv->writer, &e);
	if (rc) {
		keel_buf_adds(&err, e ? e : keel_strerror(rc));
		goto fail;
	}
	/* A store whose state lives in its one handle (memory:) is read
	 * through the writer's. */
	srv->shared_store = keel_store_state_in_handle(srv->writer);
	/* An answer tells what survives the machine (docs/http.md,
	 * "Durability"): the writer's commits are synced before they are
	 * answered, at one sync a group of POSTs. */
	if (mode != SERVE_UNSYNCED)
		keel_store_durable_commits(srv->writer);
	/* One ingester for the server's life: its batch is whatever the
	 * writer gathers, flushed by the writer only. */
	struct keel_ingest_options io = {
	    .size = sizeof io,
	    .cartridge = srv->cartridge,
	    .batch = SIZE_MAX,
	    .max_line = so->max_line,
	    .position_word = "index",
	    .on_reject = keel_http_on_reject,
	    .reject_userdata = &srv->group,
	    .on_outcome = keel_http_on_outcome,
	    .outcome_userdata = &srv->group,
	};
	if (so->forward) {
		/* Events go to the log: the store only serves reads. */
		srv->forward = (struct keel_log_options){
		    .size = sizeof srv->forward,
		    .servers = so->forward,
		    .stream = so->forward_stream,
		};
		rc = keel_http_forward_open(srv, &err);
	} else {
		rc = keel_ingest_new(srv->writer, &io, &srv->ing);
		if (rc)
			keel_buf_adds(&err, keel_strerror(rc));
	}
	if (rc)
		goto fail;
	srv->group.ing = srv->ing;
	srv->group.metrics = &srv->metrics;
	/* Read handles opened now, while nothing writes: a handle is opened
	 * later only if more requests read at once than there are workers. */
	for (unsigned i = 0; !srv->mapped && !srv->shared_store && i < so->threads; i++) {
		struct keel_store *r;
		rc = keel_store_open(srv->store_url, &r, &e);
		if (rc) {
			keel_buf_adds(&err, e ? e : keel_strerror(rc));
			goto fail;
		}
		keel_ptrvec_push(&srv->readers, r);
	}
	/* With a store map, one handle a store now (each must open), more
	 * as reads need them. */
	for (size_t i = 0; srv->mapped && i < srv->map.n; i++) {
		struct keel_store *r;
		rc = keel_store_open(srv->map.urls[i], &r, &e);
		if (rc) {
			keel_buf_adds(&err, e ? e : keel_strerror(rc));
			goto fail;
		}
		keel_ptrvec_push(&srv->pools[i], r);
	}

	if (pthread_create(&srv->watchdog, NULL, keel_http_watchdog_main, srv) != 0) {
		keel_buf_adds(&err, "cannot start the watchdog thread");
		rc = KEEL_EIO;
		goto fail;
	}
	srv->watchdog_running = true;
	if (pthread_create(&srv->writer_thread, NULL, keel_http_writer_main, srv) != 0) {
		keel_buf_adds(&err, "cannot start the writer thread");
		rc = KEEL_EIO;
		goto fail;
	}
	srv->writer_running = true;

	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
			     MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* HTTPS: the key and certificate as text, kept until the daemon
	 * stops. Without TLS the array is empty. */
	struct MHD_OptionItem tls[] = {
	    {MHD_OPTION_HTTPS_MEM_CERT, 0, srv->tls_cert_pem.data},
	    {MHD_OPTION_HTTPS_MEM_KEY, 0, srv->tls_key_pem.data},
	    /* TLS 1.2 and 1.3 only: GnuTLS's NORMAL set with every other
	     * version taken out (1.0 and 1.1 are deprecated, RFC 8996). */
	    {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)(uintptr_t)KEEL_TLS_PRIORITIES},
	    {MHD_OPTION_END, 0, NULL},
	};
	if (srv->tls_cert_pem.data)
		flags |= MHD_USE_TLS;
	else
		tls[0].option = MHD_OPTION_END;
	pthread_mutex_lock(&srv->start_log_lock);
	srv->starting = true;
	pthread_mutex_unlock(&srv->start_log_lock);
	errno = 0;
	srv->daemon = MHD_start_daemon(
	    flags, 0, NULL, NULL, keel_http_on_request, srv,
	    /* First, so that MHD's messages about later options use it. */
	    MHD_OPTION_EXTERNAL_LOGGER, keel_http_mhd_logger, srv, MHD_OPTION_SOCK_ADDR,
	    (struct sockaddr *)&ss, MHD_OPTION_THREAD_POOL_SIZE,
	    (unsigned int)so->threads, MHD_OPTION_CONNECTION_LIMIT,
	    (unsigned int)so->max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	    (unsigned int)so->max_per_ip, MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned int)so->idle_timeout, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
	    (size_t)CONNECTION_MEMORY,
	    /* No MHD_OPTION_LISTENING_ADDRESS_REUSE: set, it means
	     * SO_REUSEPORT, and a second server on a port in use would
	     * start and share its connections. libmicrohttpd's default,
	     * SO_REUSEADDR, still restarts at once past TIME_WAIT. */
	    MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024,
	    MHD_OPTION_NOTIFY_COMPLETED, keel_http_on_completed, srv,
	    MHD_OPTION_NOTIFY_CONNECTION, keel_http_on_connection, srv,
	    MHD_OPTION_UNESCAPE_CALLBACK, keel_http_no_unescape, srv, MHD_OPTION_ARRAY,
	    tls, MHD_OPTION_END);
	int start_errno = errno;
	pthread_mutex_lock(&srv->start_log_lock);
	srv->starting = false;
	pthread_mutex_unlock(&srv->start_log_lock);
	if (!srv->daemon && srv->start_tls_failed && srv->start_log.len) {
		/* GnuTLS refused the certificate or the key (a broken PEM body,
		 * a key that does not match): libmicrohttpd only logs why. */
		keel_buf_addf(&err,
			      "--tls-cert \"%s\", --tls-key \"%s\": cannot start TLS: %s",
			      so->tls_cert, so->tls_key, srv->start_log.data);
		rc = KEEL_EIO;
		goto fail;
	}
	if (!srv->daemon) {
		keel_buf_addf(&err, "listen \"%s\": cannot start the server (%s)",
			      so->listen,
			      start_errno ? strerror(start_errno)
					  : "libmicrohttpd refused the options");
		rc = KEEL_EIO;
		goto fail;
	}
	const union MHD_DaemonInfo *di =
	    MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
	srv->port = di ? di->port : 0;
	keel_http_log(srv, "listening on %s (port %u), %s, store %s, %u threads%s%s%s%s%s",
		      so->listen, (unsigned)srv->port,
		      srv->tls_cert_pem.data ? "HTTPS" : "plain HTTP", srv->store_url,
		      so->threads, srv->auth ? "" : ", no tokens (loopback only)",
		      srv->null_mode ? ", NULL MODE (events are not ingested)" : "",
		      so->forward ? ", events forwarded to the log " : "",
		      so->forward ? so->forward_stream : "",
		      so->forward ? " (reads only from the store)" : "");
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
		if (pthread_cond_timedwait(&srv->inflight_cond, &srv->inflight_lock,
					   &until) == ETIMEDOUT)
			break;
	}
	unsigned left = srv->inflight;
	pthread_mutex_unlock(&srv->inflight_lock);
	if (left)
		keel_http_log(srv, "grace period over: closing %u unfinished requests",
			      left);
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
		if (pthread_cond_timedwait(&srv->inflight_cond, &srv->inflight_lock,
					   &until) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&srv->inflight_lock);
	MHD_stop_daemon(srv->daemon);
	keel_http_log(srv, "stopped");
	server_free(srv);
}

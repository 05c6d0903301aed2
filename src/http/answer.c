/*
 * answer.c - answers of keel serve: JSON text, error documents, the
 * Allow header, the server's log, and percent-decoding of paths.
 */
#include "server.h"
#include "event/json_write.h"

/* ------------------------------------------------------------- helpers */

int64_t keel_http_mono_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void keel_http_log(struct keel_server *srv, const char *fmt, ...)
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

/* One line of JSON per request, written whole by one call so that lines
 * of concurrent requests never interleave. The token is never logged; the
 * path is as sent (percent-escaped, without the query). */
void keel_http_log_request(struct keel_server *srv, struct request *rq)
{
	FILE *f = srv->o.request_log;
	if (!f || !rq->method)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char when[KEEL_TIME_BUFSZ];
	keel_time_format((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000, when);
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_addf(&b, "{\"time\":\"%s\",\"method\":", when);
	keel_buf_add_json_str(&b, keel_str_cstr(rq->method));
	keel_buf_adds(&b, ",\"path\":");
	keel_buf_add_json_str(&b, keel_str_cstr(rq->path));
	if (rq->status)
		keel_buf_addf(&b, ",\"status\":%u", rq->status);
	else
		keel_buf_adds(&b, ",\"status\":null"); /* closed without an answer */
	/* A HEAD answer's body is not sent. */
	size_t bytes = strcmp(rq->method, MHD_HTTP_METHOD_HEAD) == 0 ? 0 : rq->bytes;
	keel_buf_addf(&b, ",\"bytes\":%zu,\"usec\":%lld,\"tenant\":", bytes,
		      (long long)(keel_http_mono_usec() - rq->started));
	if (rq->tenant.data)
		keel_buf_add_json_str(&b, keel_str_make(rq->tenant.data, rq->tenant.len));
	else if (rq->job.tenants == 1)
		keel_buf_add_json_str(&b, keel_str_cstr(rq->job.tenant));
	else
		keel_buf_adds(&b, "null");
	keel_buf_adds(&b, "}\n");
	fwrite(b.data, 1, b.len, f);
	fflush(f);
	keel_buf_free(&b);
}

/* Queues r with the headers every answer gets, counts it and notes it
 * for the request log (len: the body's bytes). */
static enum MHD_Result queue(struct keel_server *srv, struct MHD_Connection *c,
			     unsigned status, struct MHD_Response *r, size_t len)
{
	/* While stopping, keep-alive connections are told to go away. */
	if (atomic_load(&srv->stopping))
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	keel_metrics_status(&srv->metrics, status);
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *conn = ci ? ci->socket_context : NULL;
	if (conn && conn->rq && ret == MHD_YES) {
		conn->rq->status = status;
		conn->rq->bytes = len;
	}
	return ret;
}

/* Queues an answer; takes the body (malloc'd or NULL). allow: for a 405,
 * the methods the path does take (the Allow header), else NULL. */
static enum MHD_Result answer_allow(struct keel_server *srv, struct MHD_Connection *c,
				    unsigned status, char *body, size_t len,
				    const char *content_type, const char *allow)
{
	static char empty[1];
	struct MHD_Response *r = MHD_create_response_from_buffer(
	    len, body ? body : empty,
	    body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
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
	return queue(srv, c, status, r, len);
}

enum MHD_Result keel_http_answer_headers(struct keel_server *srv, struct MHD_Connection *c,
					 unsigned status, const char *body, size_t len,
					 bool persistent, const char *const *headers)
{
	/* libmicrohttpd takes a non-const pointer even for buffers it only
	 * reads (PERSISTENT) or copies (MUST_COPY). */
	struct MHD_Response *r = MHD_create_response_from_buffer(
	    len, (void *)(uintptr_t)body,
	    persistent ? MHD_RESPMEM_PERSISTENT : MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	for (; *headers; headers += 2)
		MHD_add_response_header(r, headers[0], headers[1]);
	return queue(srv, c, status, r, len);
}

enum MHD_Result keel_http_answer(struct keel_server *srv, struct MHD_Connection *c,
				 unsigned status, char *body, size_t len,
				 const char *content_type)
{
	return answer_allow(srv, c, status, body, len, content_type, NULL);
}

enum MHD_Result keel_http_answer_json(struct keel_server *srv, struct MHD_Connection *c,
				      unsigned status, struct keel_buf *b)
{
	keel_buf_addc(b, '\n');
	char *data = b->data;
	size_t len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return keel_http_answer(srv, c, status, data, len, "application/json");
}

/* 200 with a constant JSON text. */
enum MHD_Result keel_http_answer_const(struct keel_server *srv, struct MHD_Connection *c,
				       const char *json)
{
	return keel_http_answer(srv, c, MHD_HTTP_OK, keel_xstrdup(json), strlen(json),
				"application/json");
}

void keel_http_error_vdoc(struct keel_buf *b, const char *fmt, va_list ap)
{
	struct keel_buf msg;
	keel_buf_init(&msg);
	keel_buf_vaddf(&msg, fmt, ap);
	keel_buf_adds(b, "{\"error\":");
	keel_buf_add_json_str(b, keel_str_make(msg.data ? msg.data : "", msg.len));
	keel_buf_adds(b, "}\n");
	keel_buf_free(&msg);
}

void keel_http_error_doc(struct keel_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	keel_http_error_vdoc(b, fmt, ap);
	va_end(ap);
}

/* {"error":"..."} with a printf-style message. */
enum MHD_Result keel_http_answer_error(struct keel_server *srv, struct MHD_Connection *c,
				       unsigned status, const char *fmt, ...)
{
	struct keel_buf b;
	keel_buf_init(&b);
	va_list ap;
	va_start(ap, fmt);
	keel_http_error_vdoc(&b, fmt, ap);
	va_end(ap);
	return keel_http_answer(srv, c, status, b.data, b.len, "application/json");
}

/* 405 on a known path, with the methods it takes in Allow (RFC 9110). */
enum MHD_Result keel_http_answer_not_allowed(struct keel_server *srv,
					     struct MHD_Connection *c, const char *method,
					     const char *allow)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_http_error_doc(&b, KEEL_HTTP_NOT_ALLOWED, method);
	return answer_allow(srv, c, MHD_HTTP_METHOD_NOT_ALLOWED, b.data, b.len,
			    "application/json", allow);
}

/* Decodes %XX escapes of s[0..len) into out. Fails on a bad escape or an
 * escaped NUL (names are C strings further down). */
bool keel_http_percent_decode(const char *s, size_t len, struct keel_buf *out)
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
	/* NUL-terminated even when empty ("?at="): reserve alone writes no
	 * terminator. */
	keel_buf_reserve(out, 0);
	out->data[out->len] = 0;
	return true;
}

/*
 * watchdog.c - the per-connection watchdog of keel serve: header and
 * request timeouts, which libmicrohttpd 0.9.75 lacks, and the daemon's
 * connection callbacks.
 */
#include "server.h"

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
void *keel_http_watchdog_main(void *arg)
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
		int64_t now = keel_http_mono_usec();
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

void keel_http_set_deadline(struct conn *c, int64_t usec_from_now)
{
	if (c)
		atomic_store(&c->deadline, usec_from_now == INT64_MAX
					       ? INT64_MAX
					       : keel_http_mono_usec() + usec_from_now);
}

void keel_http_on_connection(void *cls, struct MHD_Connection *connection,
			     void **socket_context,
			     enum MHD_ConnectionNotificationCode toe)
{
	struct keel_server *srv = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		struct conn *c = keel_xcalloc(1, sizeof *c);
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
		    connection, MHD_CONNECTION_INFO_CONNECTION_FD);
		c->fd = ci ? ci->connect_fd : -1;
		atomic_init(&c->deadline, keel_http_mono_usec() +
					      (int64_t)srv->o.header_timeout * 1000000);
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

void keel_http_on_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
			    enum MHD_RequestTerminationCode toe)
{
	(void)connection;
	(void)toe;
	struct keel_server *srv = cls;
	struct request *rq = *con_cls;
	if (!rq)
		return;
	keel_http_log_request(srv, rq);
	if (rq->conn)
		rq->conn->rq = NULL;
	free(rq->method);
	free(rq->path);
	keel_buf_free(&rq->tenant);
	keel_http_set_deadline(rq->conn, (int64_t)srv->o.header_timeout * 1000000);
	atomic_fetch_sub(&srv->metrics.buffered, rq->claimed);
	keel_buf_free(&rq->body);
	if (rq->binary) {
		keel_ce_binary_free(rq->binary);
		free(rq->binary);
	}
	free(rq->job.items);
	keel_buf_free(&rq->job.rejects);
	keel_buf_free(&rq->job.conflicts);
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
size_t keel_http_no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return strlen(s);
}

/* libmicrohttpd hands its own format strings to this logger. */
__attribute__((format(printf, 2, 0))) void
keel_http_mhd_logger(void *cls, const char *fmt, va_list ap)
{
	struct keel_server *srv = cls;
	pthread_mutex_lock(&srv->start_log_lock);
	if (srv->starting) {
		/* While the daemon starts, its messages say why it refused:
		 * the first is the cause (GnuTLS's reason for a certificate),
		 * which keel_server_start's error quotes; a failed TLS set-up
		 * always ends with libmicrohttpd's "Failed to initialize TLS
		 * support", which tells it from a failed bind. */
		struct keel_buf msg;
		keel_buf_init(&msg);
		va_list again;
		va_copy(again, ap);
		keel_buf_vaddf(&msg, fmt, again);
		va_end(again);
		while (msg.len && (msg.data[msg.len - 1] == '\n' || msg.data[msg.len - 1] == '.'))
			msg.data[--msg.len] = 0;
		if (msg.data && strstr(msg.data, "TLS"))
			srv->start_tls_failed = true;
		if (!srv->start_log.len && msg.len)
			keel_buf_add(&srv->start_log, msg.data, msg.len);
		keel_buf_free(&msg);
	}
	pthread_mutex_unlock(&srv->start_log_lock);
	if (!srv->o.log)
		return;
	fputs("keel serve: libmicrohttpd: ", srv->o.log);
	vfprintf(srv->o.log, fmt, ap);
	fflush(srv->o.log);
}

/*
 * nats.c - connecting to a log's servers and saying what went wrong.
 *
 * A log is given as "nats://host:port[,host:port...]": every server is
 * handed to the client library, which connects to one and moves to
 * another when it goes away (reconnecting for ever, publishes made
 * meanwhile buffered): a JetStream node that is killed and restarted is
 * the library's business, not the caller's. The first connection is not:
 * when no server answers, the caller is told (keel consume retries,
 * keel publish and keel stream stop with the message).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

int64_t keel_log_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void keel_nats_errtext(struct keel_buf *b, natsStatus s, jsErrCode jerr)
{
	natsStatus last = NATS_OK;
	const char *text = nats_GetLastError(&last);
	if (text && *text && last == s) {
		/* the library prefixes its own source position: "(conn.c:2088): " */
		const char *past = text[0] == '(' ? strstr(text, "): ") : NULL;
		keel_buf_adds(b, past ? past + 3 : text);
	} else
		keel_buf_adds(b, natsStatus_GetText(s));
	if (jerr)
		keel_buf_addf(b, " (jetstream error %d)", (int)jerr);
}

int keel_nats_check_options(const struct keel_log_options *o, struct keel_buf *err)
{
	if (!o->servers || !*o->servers) {
		keel_buf_adds(err, "no log servers given (nats://host:port)");
		return KEEL_EINVAL;
	}
	if (!keel_log_name_ok(o->stream)) {
		keel_buf_adds(err, "log name \"");
		keel_buf_adds(err, o->stream ? o->stream : "");
		keel_buf_adds(err, "\": not 1 to 64 letters, digits, '-' or '_'");
		return KEEL_EINVAL;
	}
	return 0;
}

/* The servers as the client library takes them: each with its scheme. */
static int keel_nats_urls(const char *servers, struct keel_ptrvec *urls,
			  struct keel_buf *err)
{
	const char *p = servers;
	while (*p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		while (n && (*p == ' '))
			p++, n--;
		while (n && p[n - 1] == ' ')
			n--;
		if (n == 0) {
			keel_buf_addf(err, "log servers \"%s\": an empty server in the list",
				      servers);
			return KEEL_EINVAL;
		}
		struct keel_buf u;
		keel_buf_init(&u);
		if (!memchr(p, ':', n) || (n > 3 && memmem(p, n, "://", 3) &&
					   strncmp(p, "nats://", 7) != 0)) {
			keel_buf_free(&u);
			keel_buf_addf(err,
				      "log server \"%.*s\": not nats://host:port or "
				      "host:port",
				      (int)n, p);
			return KEEL_EINVAL;
		}
		if (strncmp(p, "nats://", 7) != 0)
			keel_buf_adds(&u, "nats://");
		keel_buf_add(&u, p, n);
		keel_ptrvec_push(urls, u.data);
		p += n;
		while (*p == ' ')
			p++;
		if (*p == ',')
			p++;
	}
	return 0;
}

int keel_nats_connect(const struct keel_log_options *o, const char *client_name,
		      const struct keel_nats_extra *extra, struct keel_nats *n,
		      struct keel_buf *err)
{
	const jsOptions *js_options = extra ? extra->js : NULL;
	memset(n, 0, sizeof *n);
	int rc = keel_nats_check_options(o, err);
	if (rc)
		return rc;
	struct keel_ptrvec urls = {0};
	if ((rc = keel_nats_urls(o->servers, &urls, err)) != 0)
		goto out;
	natsOptions *opts = NULL;
	natsStatus s = natsOptions_Create(&opts);
	if (s == NATS_OK) {
		/* The client takes const char **: the pointers copied, not
		 * cast, since a cast would drop const two levels down. */
		const char **list = keel_xcalloc(urls.len ? urls.len : 1, sizeof *list);
		for (size_t i = 0; i < urls.len; i++)
			list[i] = urls.items[i];
		s = natsOptions_SetServers(opts, list, (int)urls.len);
		free(list);
	}
	if (s == NATS_OK && client_name)
		s = natsOptions_SetName(opts, client_name);
	if (s == NATS_OK)
		s = natsOptions_SetTimeout(opts, o->connect_timeout_ms ? o->connect_timeout_ms
								      : 5000);
	/* Reconnect for ever, every quarter second: a cluster whose node was
	 * restarted is found again; the callers' own deadlines decide when
	 * to give up. */
	if (s == NATS_OK)
		s = natsOptions_SetMaxReconnect(opts, -1);
	if (s == NATS_OK)
		s = natsOptions_SetReconnectWait(opts, 250);
	if (s == NATS_OK)
		s = natsOptions_SetReconnectBufSize(
		    opts, extra && extra->no_reconnect_buffer ? 1 : 64 << 20);
	if (s == NATS_OK && extra && extra->disconnected)
		s = natsOptions_SetDisconnectedCB(opts, extra->disconnected, extra->closure);
	if (s == NATS_OK && extra && extra->closed)
		s = natsOptions_SetClosedCB(opts, extra->closed, extra->closure);
	if (s == NATS_OK)
		s = natsConnection_Connect(&n->nc, opts);
	if (s != NATS_OK) {
		keel_buf_addf(err, "cannot reach the log at %s: ", o->servers);
		keel_nats_errtext(err, s, 0);
		rc = KEEL_EIO;
	}
	if (rc == 0) {
		jsOptions jo;
		if (js_options) {
			jo = *js_options;
		} else {
			jsOptions_Init(&jo);
			jo.Wait = 5000;
		}
		s = natsConnection_JetStream(&n->js, n->nc, &jo);
		if (s != NATS_OK) {
			keel_buf_adds(err, "jetstream: ");
			keel_nats_errtext(err, s, 0);
			rc = KEEL_EIO;
		}
	}
	natsOptions_Destroy(opts);
	/* A connection made is left to the caller's keel_nats_close, even on
	 * failure: its closed callback owns what its other callbacks use. */
	n->servers = keel_xstrdup(o->servers);
out:
	for (size_t i = 0; i < urls.len; i++)
		free(urls.items[i]);
	keel_ptrvec_free(&urls);
	return rc;
}

void keel_nats_close(struct keel_nats *n)
{
	if (n->js)
		jsCtx_Destroy(n->js);
	if (n->nc) {
		natsConnection_Close(n->nc);
		natsConnection_Destroy(n->nc);
	}
	free(n->servers);
	memset(n, 0, sizeof *n);
}

int keel_nats_partitions(struct keel_nats *n, const char *stream, uint32_t *partitions,
			 struct keel_buf *err)
{
	struct keel_buf name;
	keel_buf_init(&name);
	keel_log_stream_name(&name, stream, 0);
	jsStreamInfo *si = NULL;
	jsErrCode jerr = 0;
	natsStatus s = js_GetStreamInfo(&si, n->js, name.data, NULL, &jerr);
	int rc = 0;
	uint32_t p = 0;
	if (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr) {
		keel_buf_addf(err,
			      "log \"%s\" not found at %s (no stream \"%s\"): make it with "
			      "keel stream create",
			      stream, n->servers, name.data);
		rc = KEEL_EINVAL;
	} else if (s != NATS_OK) {
		keel_buf_addf(err, "reading stream \"%s\": ", name.data);
		keel_nats_errtext(err, s, jerr);
		rc = KEEL_EIO;
	} else if (!keel_log_description_parse(si->Config->Description, &p, partitions) ||
		   p != 0) {
		keel_buf_addf(err,
			      "stream \"%s\" is not a partition of a keel log (its "
			      "description is \"%s\")",
			      name.data,
			      si->Config->Description ? si->Config->Description : "");
		rc = KEEL_EINVAL;
	}
	jsStreamInfo_Destroy(si);
	keel_buf_free(&name);
	return rc;
}

int keel_log_stream_state(struct keel_nats *n, const char *stream, int64_t wait_ms,
			  uint64_t *first, uint64_t *last, struct keel_buf *why)
{
	jsOptions jo;
	jsOptions_Init(&jo);
	jo.Wait = wait_ms;
	jsStreamInfo *si = NULL;
	jsErrCode jerr = 0;
	natsStatus s = js_GetStreamInfo(&si, n->js, stream, &jo, &jerr);
	int rc = 0;
	if (s != NATS_OK) {
		keel_buf_addf(why, "reading stream \"%s\": ", stream);
		keel_nats_errtext(why, s, jerr);
		rc = KEEL_EIO;
	} else if (si->Cluster && (!si->Cluster->Leader || !*si->Cluster->Leader)) {
		keel_buf_addf(why, "stream \"%s\" has no leader (an election is going on)",
			      stream);
		rc = KEEL_EIO;
	} else {
		*first = si->State.FirstSeq;
		*last = si->State.LastSeq;
	}
	jsStreamInfo_Destroy(si);
	return rc;
}

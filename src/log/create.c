/*
 * create.c - keel_log_create (keel stream create): a log's streams, one
 * a partition, and its leases bucket, or the check that an existing log
 * is the one asked for (docs/log.md, "Making a log").
 *
 * Each partition is a stream of its own, so that its sequence numbers
 * have no gaps: a consumer that stores "applied up to N" can tell a
 * message it has not seen from one that does not exist. Its description
 * records the partition and how many there are, which is how publishers
 * and consumers learn P (the first stream's). Streams keep their
 * messages on file, replicated `replicas` times, with a duplicate window
 * (a retried publish of the same Nats-Msg-Id is stored once) and the
 * limits asked for; old messages go first when a limit is reached.
 */
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "log.h"

#define NS_PER_MS 1000000

static int keel_log_check_stream(struct keel_nats *n, const jsStreamInfo *si,
				 const char *name, const char *stream, uint32_t p,
				 uint32_t partitions, unsigned replicas, struct keel_buf *err)
{
	uint32_t got_p, got_n;
	const jsStreamConfig *c = si->Config;
	if (!keel_log_description_parse(c->Description, &got_p, &got_n) || got_p != p) {
		keel_buf_addf(err,
			      "stream \"%s\" exists and is not partition %u of a keel log "
			      "(its description is \"%s\")",
			      name, (unsigned)p, c->Description ? c->Description : "");
		return KEEL_EINVAL;
	}
	if (got_n != partitions) {
		keel_buf_addf(err,
			      "log \"%s\" exists with %u partitions, not %u: the number of "
			      "partitions is fixed when a log is made",
			      stream, (unsigned)got_n, (unsigned)partitions);
		return KEEL_EINVAL;
	}
	if (c->Replicas != (int64_t)replicas) {
		keel_buf_addf(err, "stream \"%s\" exists with %lld replicas, not %u", name,
			      (long long)c->Replicas, replicas);
		return KEEL_EINVAL;
	}
	(void)n;
	return 0;
}

static int keel_log_make_stream(struct keel_nats *n, const struct keel_log_options *o,
				uint32_t p, unsigned replicas, struct keel_buf *report,
				struct keel_buf *err)
{
	struct keel_buf name, subject, desc;
	keel_buf_init(&name);
	keel_buf_init(&subject);
	keel_buf_init(&desc);
	keel_log_stream_name(&name, o->stream, p);
	keel_log_subject(&subject, o->stream, p);
	keel_log_description(&desc, o->stream, p, o->partitions);
	int rc = 0;
	jsErrCode jerr = 0;
	jsStreamInfo *si = NULL;
	natsStatus s = js_GetStreamInfo(&si, n->js, name.data, NULL, &jerr);
	if (s == NATS_OK) {
		rc = keel_log_check_stream(n, si, name.data, o->stream, p, o->partitions,
					   replicas, err);
		if (rc == 0)
			keel_buf_addf(report, "stream %s (subject %s): exists, %llu messages\n",
				      name.data, subject.data,
				      (unsigned long long)si->State.Msgs);
		goto out;
	}
	if (s != NATS_NOT_FOUND && jerr != JSStreamNotFoundErr) {
		keel_buf_addf(err, "reading stream \"%s\": ", name.data);
		keel_nats_errtext(err, s, jerr);
		rc = KEEL_EIO;
		goto out;
	}
	jsStreamConfig c;
	jsStreamConfig_Init(&c);
	const char *subjects[] = {subject.data};
	c.Name = name.data;
	c.Description = desc.data;
	c.Subjects = subjects;
	c.SubjectsLen = 1;
	c.Storage = js_FileStorage;
	c.Retention = js_LimitsPolicy;
	c.Discard = js_DiscardOld;
	c.Replicas = replicas;
	c.Duplicates = (int64_t)(o->duplicate_window_ms ? o->duplicate_window_ms
						       : KEEL_LOG_DEFAULT_DUPLICATE_WINDOW_MS) *
		       NS_PER_MS;
	c.MaxAge = (int64_t)o->max_age_ms * NS_PER_MS;
	c.MaxBytes = o->max_bytes ? o->max_bytes : -1;
	c.MaxMsgs = -1;
	c.MaxConsumers = -1;
	jerr = 0;
	jsStreamInfo_Destroy(si);
	si = NULL;
	s = js_AddStream(&si, n->js, &c, NULL, &jerr);
	if (s != NATS_OK) {
		keel_buf_addf(err, "making stream \"%s\": ", name.data);
		keel_nats_errtext(err, s, jerr);
		rc = jerr == JSClusterNoPeersErr ? KEEL_EINVAL : KEEL_EIO;
		goto out;
	}
	keel_buf_addf(report, "stream %s (subject %s): made, %u replica%s\n", name.data,
		      subject.data, replicas, replicas == 1 ? "" : "s");
out:
	jsStreamInfo_Destroy(si);
	keel_buf_free(&name);
	keel_buf_free(&subject);
	keel_buf_free(&desc);
	return rc;
}

/* The leases bucket: one key a partition and a member, each gone a lease
 * time after its last write (the bucket's TTL). */
static int keel_log_make_bucket(struct keel_nats *n, const struct keel_log_options *o,
				unsigned replicas, struct keel_buf *report,
				struct keel_buf *err)
{
	struct keel_buf bucket;
	keel_buf_init(&bucket);
	keel_log_bucket(&bucket, o->stream);
	kvStore *kv = NULL;
	int rc = 0;
	uint32_t lease = o->lease_ms ? o->lease_ms : KEEL_LOG_DEFAULT_LEASE_MS;
	natsStatus s = js_KeyValue(&kv, n->js, bucket.data);
	if (s == NATS_OK) {
		kvStatus *st = NULL;
		s = kvStore_Status(&st, kv);
		if (s == NATS_OK)
			keel_buf_addf(report, "bucket %s: exists, lease %lld ms\n", bucket.data,
				      (long long)(kvStatus_TTL(st) / NS_PER_MS));
		kvStatus_Destroy(st);
	} else if (s == NATS_NOT_FOUND) {
		kvConfig c;
		kvConfig_Init(&c);
		c.Bucket = bucket.data;
		c.Description = "keel log leases: partition owners and members";
		c.History = 1;
		c.TTL = (int64_t)lease * NS_PER_MS;
		c.StorageType = js_FileStorage;
		c.Replicas = (int)replicas;
		s = js_CreateKeyValue(&kv, n->js, &c);
		if (s == NATS_OK)
			keel_buf_addf(report, "bucket %s: made, lease %u ms\n", bucket.data,
				      (unsigned)lease);
	}
	if (s != NATS_OK) {
		keel_buf_addf(err, "leases bucket \"%s\": ", bucket.data);
		keel_nats_errtext(err, s, 0);
		rc = KEEL_EIO;
	}
	kvStore_Destroy(kv);
	keel_buf_free(&bucket);
	return rc;
}

int keel_log_create(const struct keel_log_options *given, char **report, char **errmsg)
{
	if (report)
		*report = NULL;
	if (errmsg)
		*errmsg = NULL;
	struct keel_log_options o;
	struct keel_buf err, rep;
	keel_buf_init(&err);
	keel_buf_init(&rep);
	int rc = 0;
	const char *why = given ? keel_options_copy(&o, sizeof o, given) : "NULL options";
	if (why) {
		keel_buf_addf(&err, "keel_log_options: %s", why);
		rc = KEEL_EINVAL;
		goto out;
	}
	unsigned replicas = o.replicas ? o.replicas : 1;
	if (o.partitions < 1 || o.partitions > KEEL_LOG_MAX_PARTITIONS) {
		keel_buf_addf(&err, "partitions %u: not from 1 to %d", (unsigned)o.partitions,
			      KEEL_LOG_MAX_PARTITIONS);
		rc = KEEL_EINVAL;
		goto out;
	}
	if (replicas > 5) {
		keel_buf_addf(&err, "replicas %u: JetStream keeps at most 5", replicas);
		rc = KEEL_EINVAL;
		goto out;
	}
	struct keel_nats n;
	if ((rc = keel_nats_connect(&o, "keel stream create", NULL, &n, &err)) != 0)
		goto out;
	/* A log with more partitions than asked for has a stream past the
	 * last: refused rather than silently cut. */
	struct keel_buf name;
	keel_buf_init(&name);
	keel_log_stream_name(&name, o.stream, o.partitions);
	jsStreamInfo *si = NULL;
	jsErrCode jerr = 0;
	natsStatus s = js_GetStreamInfo(&si, n.js, name.data, NULL, &jerr);
	uint32_t got_p, got_n;
	if (s == NATS_OK && keel_log_description_parse(si->Config->Description, &got_p, &got_n)) {
		keel_buf_addf(&err,
			      "log \"%s\" exists with %u partitions, not %u: the number of "
			      "partitions is fixed when a log is made",
			      o.stream, (unsigned)got_n, (unsigned)o.partitions);
		rc = KEEL_EINVAL;
	}
	jsStreamInfo_Destroy(si);
	keel_buf_free(&name);
	for (uint32_t p = 0; rc == 0 && p < o.partitions; p++)
		rc = keel_log_make_stream(&n, &o, p, replicas, &rep, &err);
	if (rc == 0)
		rc = keel_log_make_bucket(&n, &o, replicas, &rep, &err);
	keel_nats_close(&n);
out:
	if (rc == 0 && report)
		*report = keel_xstrdup(rep.data ? rep.data : "");
	if (rc && errmsg)
		*errmsg = keel_xstrdup(err.data ? err.data : keel_strerror(rc));
	keel_buf_free(&err);
	keel_buf_free(&rep);
	return rc;
}

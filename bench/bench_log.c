/*
 * bench_log.c - keel publish against raw publishing of the same bytes
 * (docs/scaling.md): the same NDJSON file onto two logs of the same
 * shape, side by side in one run:
 *
 *   raw   each line as it is, asynchronously, to its tenant's partition
 *         (the partition computed from the tenant found by a plain string
 *         search, no JSON parsing), at most 4096 unacknowledged: what the
 *         client library and the servers cost, as nats bench measures;
 *   keel  the library's publisher (keel_publisher_*): every line parsed,
 *         checked as ingest checks it, compacted, given its Nats-Msg-Id,
 *         published with the same bound.
 *
 * Usage: bench_log SERVERS RAW_LOG KEEL_LOG FILE PARTITIONS
 * Both logs must exist and be empty (keel stream create), with PARTITIONS
 * partitions. Prints one markdown row each and the ratio. bench/bench_log.sh runs it with the rest of the log's table.
 */
#include <nats/nats.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keel.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct lines {
	char *text;
	size_t *off, *len, n;
};

static void lines_read(const char *path, struct lines *l)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fseek(f, 0, SEEK_SET);
	l->text = malloc((size_t)size + 1);
	if (!l->text || fread(l->text, 1, (size_t)size, f) != (size_t)size) {
		fprintf(stderr, "bench_log: cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	size_t cap = 1024;
	l->off = malloc(cap * sizeof *l->off);
	l->len = malloc(cap * sizeof *l->len);
	l->n = 0;
	for (size_t p = 0; p < (size_t)size;) {
		char *nl = memchr(l->text + p, '\n', (size_t)size - p);
		size_t end = nl ? (size_t)(nl - l->text) : (size_t)size;
		if (l->n == cap) {
			cap *= 2;
			l->off = realloc(l->off, cap * sizeof *l->off);
			l->len = realloc(l->len, cap * sizeof *l->len);
		}
		l->off[l->n] = p;
		l->len[l->n] = end - p;
		l->n++;
		p = end + 1;
	}
}

/* ---------------------------------------------------------------- raw */

static atomic_long raw_acked;
static atomic_long raw_failed;

static void raw_on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
	(void)js;
	(void)closure;
	if (pa)
		atomic_fetch_add(&raw_acked, 1);
	else if (pae)
		atomic_fetch_add(&raw_failed, 1);
	natsMsg_Destroy(msg);
}

static double raw_publish(const char *servers, const char *stream, uint32_t partitions,
			  const struct lines *l)
{
	natsOptions *opts = NULL;
	natsConnection *nc = NULL;
	jsCtx *js = NULL;
	jsOptions jo;
	jsOptions_Init(&jo);
	jo.PublishAsync.AckHandler = raw_on_ack;
	jo.PublishAsync.MaxPending = 4096;
	jo.PublishAsync.StallWait = 10000;
	natsStatus s = natsOptions_Create(&opts);
	if (s == NATS_OK)
		s = natsOptions_SetURL(opts, servers);
	if (s == NATS_OK)
		s = natsConnection_Connect(&nc, opts);
	if (s == NATS_OK)
		s = natsConnection_JetStream(&js, nc, &jo);
	if (s != NATS_OK) {
		fprintf(stderr, "bench_log: connecting: %s\n", natsStatus_GetText(s));
		exit(1);
	}
	atomic_store(&raw_acked, 0);
	atomic_store(&raw_failed, 0);
	char subject[128];
	double t0 = now_s();
	for (size_t i = 0; i < l->n; i++) {
		const char *line = l->text + l->off[i];
		/* the tenant, by a plain search: "tenant":"..." */
		const char *t = memmem(line, l->len[i], "\"tenant\":\"", 10);
		const char *te = t ? memchr(t + 10, '"', l->len[i] - (size_t)(t + 10 - line)) : NULL;
		uint32_t p = te ? keel_log_partition(t + 10, (size_t)(te - t - 10), partitions) : 0;
		snprintf(subject, sizeof subject, "%s.%u", stream, (unsigned)p);
		s = js_PublishAsync(js, subject, line, (int)l->len[i], NULL);
		if (s != NATS_OK) {
			fprintf(stderr, "bench_log: raw publish: %s\n", natsStatus_GetText(s));
			exit(1);
		}
	}
	s = js_PublishAsyncComplete(js, NULL);
	double t = now_s() - t0;
	if (s != NATS_OK || atomic_load(&raw_failed)) {
		fprintf(stderr, "bench_log: raw: %ld failed\n", atomic_load(&raw_failed));
		exit(1);
	}
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	natsOptions_Destroy(opts);
	return (double)l->n / t;
}

/* --------------------------------------------------------------- keel */

static double keel_publish(const char *servers, const char *stream, const struct lines *l)
{
	struct keel_log_options lo = {.size = sizeof lo, .servers = servers, .stream = stream};
	struct keel_publish_options po = {.size = sizeof po, .log = &lo, .max_pending = 4096};
	struct keel_publisher *p = NULL;
	char *err = NULL;
	if (keel_publisher_new(&po, &p, &err)) {
		fprintf(stderr, "bench_log: %s\n", err);
		exit(1);
	}
	double t0 = now_s();
	for (size_t i = 0; i < l->n; i++)
		if (keel_publisher_add(p, l->text + l->off[i], l->len[i], i + 1)) {
			fprintf(stderr, "bench_log: %s\n", keel_publisher_errmsg(p));
			exit(1);
		}
	if (keel_publisher_flush(p)) {
		fprintf(stderr, "bench_log: %s\n", keel_publisher_errmsg(p));
		exit(1);
	}
	double t = now_s() - t0;
	const struct keel_publish_report *r = keel_publisher_report(p);
	if (r->published + r->duplicates + r->rejected != l->n) {
		fprintf(stderr, "bench_log: keel: %llu published of %zu\n",
			(unsigned long long)r->published, l->n);
		exit(1);
	}
	keel_publisher_free(p);
	return (double)l->n / t;
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: bench_log SERVERS RAW_LOG KEEL_LOG FILE PARTITIONS\n");
		return 2;
	}
	const char *servers = argv[1], *raw_log = argv[2], *keel_log = argv[3];
	uint32_t partitions = (uint32_t)strtoul(argv[5], NULL, 10);
	struct lines l;
	lines_read(argv[4], &l);
	/* Keel's first, then raw, each once onto a log of its own that is
	 * empty (a second round would find the ids stored). */
	double keel = keel_publish(servers, keel_log, &l);
	double raw = raw_publish(servers, raw_log, partitions, &l);
	printf("| raw publish (same bytes, no checks) | %zu | %9.0f | 1.00 |\n", l.n, raw);
	printf("| keel publish (checked, Nats-Msg-Id) | %zu | %9.0f | %.2f |\n", l.n, keel,
	       keel / raw);
	free(l.text);
	free(l.off);
	free(l.len);
	return 0;
}

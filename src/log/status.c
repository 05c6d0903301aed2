/*
 * status.c - keel_consume_status (keel consume --status): for each
 * partition of a log, who holds its lease, the position its store holds
 * (and the token that wrote it), the stream's last sequence and the lag
 * between them; as a table, or as Prometheus text for a metrics scrape
 * (docs/log.md, "Watching").
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lease.h"
#include "log.h"
#include "options.h"
#include "store/store.h"
#include "store_map.h"

struct keel_status_row {
	char owner[128];
	bool stored_known, last_known;
	uint64_t stored, token, last;
};

struct keel_status_read {
	struct keel_status_row *rows;
	uint32_t partitions;
	const struct keel_store_map *map;
	size_t url; /* the store being read: only its partitions count */
};

static int keel_status_position(void *ud, const struct keel_log_position *p)
{
	struct keel_status_read *rd = ud;
	if (p->partition < rd->partitions &&
	    keel_store_map_find(rd->map, p->partition) == rd->url) {
		rd->rows[p->partition].stored_known = true;
		rd->rows[p->partition].stored = p->seq;
		rd->rows[p->partition].token = p->token;
	}
	return 0;
}

static void keel_status_label(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', out);
		fputc(*s, out);
	}
}

int keel_consume_status(const struct keel_consume_options *given, bool prometheus,
			FILE *out, char **errmsg)
{
	if (errmsg)
		*errmsg = NULL;
	struct keel_consume_options o;
	struct keel_log_options log;
	struct keel_buf err;
	keel_buf_init(&err);
	struct keel_nats n = {0};
	struct keel_store_map map = {0};
	struct keel_status_row *rows = NULL;
	uint32_t partitions = 0;
	kvStore *kv = NULL;
	int rc = 0;
	const char *why = given ? keel_options_copy(&o, sizeof o, given) : "NULL options";
	if (!why && !o.log)
		why = "no log options";
	if (!why)
		why = keel_options_copy(&log, sizeof log, o.log);
	if (why) {
		keel_buf_addf(&err, "keel_consume_options: %s", why);
		rc = KEEL_EINVAL;
		goto out;
	}
	if (!!o.store_url == !!o.store_map) {
		keel_buf_adds(&err, "give a store or a store map (one of them)");
		rc = KEEL_EINVAL;
		goto out;
	}
	rc = o.store_map ? keel_store_map_read(o.store_map, &map, &err)
			 : keel_store_map_one(o.store_url, &map);
	if (rc == 0)
		rc = keel_nats_connect(&log, "keel consume --status", NULL, &n, &err);
	if (rc == 0)
		rc = keel_nats_partitions(&n, log.stream, &partitions, &err);
	if (rc == 0)
		rc = keel_store_map_check(&map, partitions, &err);
	if (rc)
		goto out;
	rows = keel_xcalloc(partitions, sizeof *rows);
	struct keel_buf name;
	keel_buf_init(&name);
	keel_log_bucket(&name, log.stream);
	if (js_KeyValue(&kv, n.js, name.data) != NATS_OK)
		kv = NULL;
	for (uint32_t p = 0; p < partitions; p++) {
		struct keel_status_row *r = &rows[p];
		keel_log_stream_name(&name, log.stream, p);
		/* only the stream leader's answer: another member's copy may
		 * lag behind (then "-") */
		struct keel_buf unanswered;
		keel_buf_init(&unanswered);
		uint64_t first = 0;
		r->last_known = keel_log_stream_state(&n, name.data, 5000, &first, &r->last,
						      &unanswered) == 0;
		keel_buf_free(&unanswered);
		char key[32];
		snprintf(key, sizeof key, "p.%u", (unsigned)p);
		kvEntry *e = NULL;
		if (kv && kvStore_Get(&e, kv, key) == NATS_OK && kvEntry_ValueLen(e) > 0)
			snprintf(r->owner, sizeof r->owner, "%.*s", kvEntry_ValueLen(e),
				 (const char *)kvEntry_Value(e));
		kvEntry_Destroy(e);
	}
	keel_buf_free(&name);
	for (size_t i = 0; i < map.n; i++) {
		struct keel_store *s = NULL;
		char *serr = NULL;
		rc = keel_store_open_existing(map.urls[i], &s, &serr);
		if (rc == 0) {
			struct keel_status_read rd = {rows, partitions, &map, i};
			rc = keel_store_log_positions(s, keel_str_cstr(log.stream),
						      keel_status_position, &rd);
			if (rc)
				keel_buf_adds(&err, keel_store_errmsg(s));
		} else {
			keel_buf_adds(&err, serr ? serr : keel_strerror(rc));
		}
		free(serr);
		keel_store_close(s);
		if (rc)
			goto out;
	}
	if (prometheus) {
		fputs("# HELP keel_log_stored_seq Sequence of the partition's last message "
		      "applied, as its store holds it.\n"
		      "# TYPE keel_log_stored_seq gauge\n",
		      out);
		for (uint32_t p = 0; p < partitions; p++)
			if (rows[p].stored_known || rows[p].last_known)
				fprintf(out, "keel_log_stored_seq{log=\"%s\",partition=\"%u\"} %" PRIu64 "\n",
					log.stream, (unsigned)p, rows[p].stored);
		fputs("# HELP keel_log_last_seq Sequence of the partition stream's last "
		      "message.\n"
		      "# TYPE keel_log_last_seq gauge\n",
		      out);
		for (uint32_t p = 0; p < partitions; p++)
			if (rows[p].last_known)
				fprintf(out, "keel_log_last_seq{log=\"%s\",partition=\"%u\"} %" PRIu64 "\n",
					log.stream, (unsigned)p, rows[p].last);
		fputs("# HELP keel_log_lag Messages of the partition not applied yet "
		      "(negative: the log is behind its store).\n"
		      "# TYPE keel_log_lag gauge\n",
		      out);
		for (uint32_t p = 0; p < partitions; p++)
			if (rows[p].last_known)
				fprintf(out, "keel_log_lag{log=\"%s\",partition=\"%u\"} %s%" PRIu64 "\n",
					log.stream, (unsigned)p,
					rows[p].last < rows[p].stored ? "-" : "",
					rows[p].last < rows[p].stored ? rows[p].stored - rows[p].last
								      : rows[p].last - rows[p].stored);
		fputs("# HELP keel_log_owner The consumer holding the partition's lease "
		      "(1).\n"
		      "# TYPE keel_log_owner gauge\n",
		      out);
		for (uint32_t p = 0; p < partitions; p++)
			if (rows[p].owner[0]) {
				fprintf(out, "keel_log_owner{log=\"%s\",partition=\"%u\",owner=\"",
					log.stream, (unsigned)p);
				keel_status_label(out, rows[p].owner);
				fputs("\"} 1\n", out);
			}
	} else {
		fprintf(out, "%-9s  %-24s  %10s  %12s  %12s  %10s\n", "partition", "owner",
			"token", "stored", "last", "lag");
		for (uint32_t p = 0; p < partitions; p++) {
			const struct keel_status_row *r = &rows[p];
			char stored[24] = "-", last[24] = "-", lag[24] = "-", token[24] = "-";
			if (r->stored_known) {
				snprintf(stored, sizeof stored, "%" PRIu64, r->stored);
				snprintf(token, sizeof token, "%" PRIu64, r->token);
			}
			if (r->last_known) {
				snprintf(last, sizeof last, "%" PRIu64, r->last);
				/* negative: the log is behind its store (docs/log.md,
				 * "A log behind its store") */
				if (r->last < r->stored)
					snprintf(lag, sizeof lag, "-%" PRIu64, r->stored - r->last);
				else
					snprintf(lag, sizeof lag, "%" PRIu64, r->last - r->stored);
			}
			fprintf(out, "%-9u  %-24s  %10s  %12s  %12s  %10s\n", (unsigned)p,
				r->owner[0] ? r->owner : "-", token, stored, last, lag);
		}
	}
out:
	if (rc && errmsg)
		*errmsg = keel_xstrdup(err.len ? err.data : keel_strerror(rc));
	kvStore_Destroy(kv);
	free(rows);
	keel_nats_close(&n);
	keel_store_map_free(&map);
	keel_buf_free(&err);
	return rc;
}

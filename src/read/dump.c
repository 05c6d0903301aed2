/*
 * dump.c - the canonical dump (docs/dump.md); its inverse is
 * keel load (src/write/load.c).
 *
 * Dump walks the store through its scan interface: tenants in bytewise
 * order, and for each tenant the four record types in the order entity,
 * fact, relation, event. Each scan already returns its records in the
 * canonical order, so this file only formats: one compact JSON object a
 * line, keys in the documented order, values and envelopes inserted as the
 * store holds them (they are compact JSON text already). Lines accumulate in
 * one buffer written with large fwrite calls.
 */
#include "keel.h"
#include "event/json_write.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "event/batch.h"
#include "dump.h"
#include "event/envelope.h"
#include "event/json.h"
#include "moment.h"
#include "store/store.h"
#include "store/timeline.h"
#include "util.h"

struct dump_ctx {
	struct keel_store *s;
	const struct keel_read_options *o; /* known_at */
	FILE *out;
	struct keel_buf buf;
	uint64_t records; /* written so far */
};

static int dump_write(struct dump_ctx *d)
{
	if (d->buf.len && fwrite(d->buf.data, 1, d->buf.len, d->out) != d->buf.len)
		return keel_store_fail(d->s, KEEL_EIO, "cannot write the dump: %s",
				       strerror(errno));
	keel_buf_reset(&d->buf);
	return 0;
}


void keel_dump_line(struct keel_buf *b, const struct keel_record *r)
{
	switch (r->type) {
	case KEEL_REC_ENTITY:
		keel_buf_add(b, "{\"type\":\"entity\",\"tenant\":", 26);
		keel_buf_add_json_str(b, r->tenant);
		keel_buf_adds(b, ",\"subject\":");
		keel_buf_add_json_str(b, r->subject);
		keel_buf_adds(b, ",\"kind\":");
		keel_buf_add_json_str(b, r->kind);
		keel_buf_adds(b, ",\"first_seen\":");
		keel_buf_add_json_time(b, r->first_seen);
		keel_buf_adds(b, ",\"last_seen\":");
		keel_buf_add_json_time(b, r->last_seen);
		break;
	case KEEL_REC_FACT:
		keel_buf_add(b, "{\"type\":\"fact\",\"tenant\":", 24);
		keel_buf_add_json_str(b, r->tenant);
		keel_buf_adds(b, ",\"subject\":");
		keel_buf_add_json_str(b, r->subject);
		keel_buf_adds(b, ",\"predicate\":");
		keel_buf_add_json_str(b, r->name);
		keel_buf_adds(b, ",\"value\":");
		keel_buf_add_json_raw(b, r->value);
		break;
	case KEEL_REC_RELATION:
		keel_buf_add(b, "{\"type\":\"relation\",\"tenant\":", 28);
		keel_buf_add_json_str(b, r->tenant);
		keel_buf_adds(b, ",\"subject\":");
		keel_buf_add_json_str(b, r->subject);
		keel_buf_adds(b, ",\"relation\":");
		keel_buf_add_json_str(b, r->name);
		keel_buf_adds(b, ",\"object\":");
		keel_buf_add_json_str(b, r->object);
		keel_buf_adds(b, r->linked ? ",\"linked\":true" : ",\"linked\":false");
		break;
	case KEEL_REC_EVENT:
		keel_buf_add(b, "{\"type\":\"event\",\"tenant\":", 25);
		keel_buf_add_json_str(b, r->tenant);
		keel_buf_adds(b, ",\"source\":");
		keel_buf_add_json_str(b, r->source);
		keel_buf_adds(b, ",\"id\":");
		keel_buf_add_json_str(b, r->id);
		keel_buf_adds(b, ",\"event_type\":");
		keel_buf_add_json_str(b, r->event_type);
		keel_buf_adds(b, ",\"time\":");
		keel_buf_add_json_time(b, r->time);
		keel_buf_adds(b, ",\"envelope\":");
		keel_buf_add_json_raw(b, r->envelope);
		break;
	}
	if (r->type == KEEL_REC_FACT || r->type == KEEL_REC_RELATION) {
		keel_buf_adds(b, ",\"valid_from\":");
		keel_buf_add_json_time(b, r->valid_from);
		keel_buf_adds(b, ",\"valid_to\":");
		keel_buf_add_json_time(b, r->valid_to);
		keel_buf_adds(b, ",\"asserted_by\":");
		keel_buf_add_json_ref(b, r->asserted_by);
		keel_buf_adds(b, ",\"closed_by\":");
		keel_buf_add_json_ref(b, r->closed_by);
	}
	keel_buf_add(b, "}\n", 2);
}

static int dump_record(void *ud, const struct keel_record *r)
{
	struct dump_ctx *d = ud;
	keel_dump_line(&d->buf, r);
	d->records++;
	return d->buf.len >= KEEL_OUTPUT_CHUNK ? dump_write(d) : 0;
}

static int dump_tenant(struct dump_ctx *d, const char *tenant)
{
	static const enum keel_record_type order[] = {KEEL_REC_ENTITY, KEEL_REC_FACT,
						      KEEL_REC_RELATION, KEEL_REC_EVENT};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(order); i++) {
		struct keel_scan q = {.type = order[i], .tenant = keel_str_cstr(tenant)};
		keel_scan_known_at(&q, d->o);
		int rc = keel_store_scan(d->s, &q, dump_record, d);
		if (rc)
			return rc;
	}
	return 0;
}

int keel_dump(struct keel_store *s, const char *tenant,
	      const struct keel_read_options *given, FILE *out)
{
	if (!s || !out)
		return KEEL_EINVAL;
	/* A dump is every row, so only known_at narrows it: as known then,
	 * it is the dump of a store that had recorded only what it had
	 * recorded by then (docs/semantics.md, "Transaction time"). */
	struct keel_read_options o;
	int rc = keel_read_options_take(s, given, &o);
	if (rc)
		return rc;
	struct dump_ctx d = {.s = s, .o = &o, .out = out};
	keel_buf_init(&d.buf);
	keel_buf_reserve(&d.buf, KEEL_OUTPUT_CHUNK + 4096);

	if (tenant) {
		rc = dump_tenant(&d, tenant);
		if (rc == 0 && d.records == 0) {
			rc = keel_store_tenant_known(
			    s, keel_str_cstr(tenant), o.known_at_set ? o.known_at : KEEL_TIME_INF);
			if (rc == 0) /* recorded since the dump read it */
				rc = keel_store_fail(s, KEEL_ENOTFOUND,
						     "tenant \"%s\" not found", tenant);
		}
	} else {
		struct keel_ptrvec names = {0};
		rc = keel_store_tenants(s, &names);
		for (size_t i = 0; rc == 0 && i < names.len; i++)
			rc = dump_tenant(&d, names.items[i]);
		for (size_t i = 0; i < names.len; i++)
			free(names.items[i]);
		keel_ptrvec_free(&names);
	}
	if (rc == 0)
		rc = dump_write(&d);
	if (rc == 0 && fflush(out) != 0)
		rc = keel_store_fail(s, KEEL_EIO, "cannot write the dump: %s",
				     strerror(errno));
	keel_buf_free(&d.buf);
	return rc;
}

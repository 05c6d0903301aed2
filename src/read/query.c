/*
 * query.c - the read side as JSON documents: show, history, why, stats
 * (docs/cli.md). The CLI prints these documents and the HTTP server
 * sends them as response bodies; their shapes are documented in
 * docs/cli.md and must only ever grow.
 *
 * Every query is a few store scans narrowed by tenant, subject, name and
 * time, and by transaction time when the caller reads the graph as known
 * at a moment (keel_read_options.known_at: every scan and count takes it,
 * the entity lookup too, so an entity not yet recorded then is not
 * found). Such a document says so with a "known_at" member. The records are formatted straight into one buffer during the scan
 * callbacks (scan views live only that long). Strings are written with the
 * canonical dump's escaping and values and envelopes as stored.
 */
#include "keel.h"
#include "event/json_write.h"

#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "store/tombstone.h"
#include "moment.h"
#include "query.h"
#include "store/store.h"
#include "util.h"

struct query_ctx {
	struct keel_buf b;
	size_t n; /* records written into the current list */
	bool found;
	/* show: the entity */
	struct keel_buf kind;
	bool has_kind;
	int64_t first_seen, last_seen;
	/* why: the row */
	struct keel_buf asserted_source, asserted_id;
};

static void add_sep(struct query_ctx *q)
{
	if (q->n++)
		keel_buf_addc(&q->b, ',');
}

/* ,"valid_from":..,"valid_to":..,"asserted_by":.. */
static void add_interval(struct keel_buf *b, const struct keel_record *r)
{
	keel_buf_adds(b, "\"valid_from\":");
	keel_buf_add_json_time(b, r->valid_from);
	keel_buf_adds(b, ",\"valid_to\":");
	keel_buf_add_json_time(b, r->valid_to);
	keel_buf_adds(b, ",\"asserted_by\":");
	keel_buf_add_json_ref(b, r->asserted_by);
}

static int query_bad(struct keel_store *s, const char *what)
{
	return keel_store_fail(s, KEEL_EINVAL, "%s: missing argument", what);
}

/* ,"known_at":TIME when the read is as known at a moment. */
static void add_known_at(struct keel_buf *b, const struct keel_read_options *o)
{
	if (!o->known_at_set)
		return;
	keel_buf_adds(b, ",\"known_at\":");
	keel_buf_add_json_time(b, o->known_at);
}

static int entity_cb(void *ud, const struct keel_record *r)
{
	struct query_ctx *q = ud;
	q->found = true;
	q->has_kind = r->kind.ptr != NULL;
	keel_buf_reset(&q->kind);
	if (r->kind.ptr)
		keel_buf_add(&q->kind, r->kind.ptr, r->kind.len);
	q->first_seen = r->first_seen;
	q->last_seen = r->last_seen;
	return 0;
}

/* Looks the entity up; KEEL_ENOTFOUND (with a message) when it is absent. */
static int find_entity(struct keel_store *s, struct query_ctx *q, const char *tenant,
		       const char *subject, const struct keel_read_options *o)
{
	struct keel_scan sc = {.type = KEEL_REC_ENTITY,
			       .tenant = keel_str_cstr(tenant),
			       .subject = keel_str_cstr(subject)};
	keel_scan_known_at(&sc, o);
	q->found = false;
	int rc = keel_store_scan(s, &sc, entity_cb, q);
	if (rc)
		return rc;
	if (q->found)
		return 0;
	/* A tenant the store does not know is not found as a tenant, the
	 * same answer every command gives it (a mistyped tenant name). */
	rc = keel_store_tenant_known(s, keel_str_cstr(tenant),
				     o->known_at_set ? o->known_at : KEEL_TIME_INF);
	if (rc)
		return rc;
	/* An entity that is not there may have been forgotten: the answer
	 * then says so, when and by whom (src/write/forget.c). */
	char msg[512];
	if (o->known_at_set) {
		char kb[KEEL_TIME_BUFSZ];
		keel_time_format(o->known_at, kb);
		snprintf(msg, sizeof msg,
			 "entity \"%s\" not found in tenant \"%s\" as known at %s",
			 subject, tenant, kb);
	} else {
		snprintf(msg, sizeof msg, "entity \"%s\" not found in tenant \"%s\"",
			 subject, tenant);
	}
	return keel_forgotten_or(s, tenant, subject, msg);
}

static void query_init(struct query_ctx *q)
{
	memset(q, 0, sizeof *q);
	keel_buf_init(&q->b);
	keel_buf_init(&q->kind);
	keel_buf_init(&q->asserted_source);
	keel_buf_init(&q->asserted_id);
}

/* Hands the document to the caller (or drops it on failure). */
static int query_finish(struct query_ctx *q, int rc, char **json)
{
	keel_buf_free(&q->kind);
	keel_buf_free(&q->asserted_source);
	keel_buf_free(&q->asserted_id);
	if (rc) {
		keel_buf_free(&q->b);
		return rc;
	}
	keel_buf_reserve(&q->b, 0); /* NUL-terminated even when empty */
	*json = q->b.data;
	return 0;
}

/* Opens the document with "tenant" and "subject". */
static void begin_doc(struct query_ctx *q, const char *tenant, const char *subject)
{
	keel_buf_adds(&q->b, "{\"tenant\":");
	keel_buf_add_json_str(&q->b, keel_str_cstr(tenant));
	keel_buf_adds(&q->b, ",\"subject\":");
	keel_buf_add_json_str(&q->b, keel_str_cstr(subject));
}

/* ------------------------------------------------------------------ show */

static int show_fact_cb(void *ud, const struct keel_record *r)
{
	struct query_ctx *q = ud;
	if (!r->value.ptr)
		return 0; /* unset: the predicate has no value at this time */
	add_sep(q);
	keel_buf_add_json_str(&q->b, r->name);
	keel_buf_adds(&q->b, ":{\"value\":");
	keel_buf_add_json_raw(&q->b, r->value);
	keel_buf_addc(&q->b, ',');
	add_interval(&q->b, r);
	keel_buf_addc(&q->b, '}');
	return 0;
}

static int show_out_cb(void *ud, const struct keel_record *r)
{
	struct query_ctx *q = ud;
	if (!r->linked)
		return 0;
	add_sep(q);
	keel_buf_adds(&q->b, "{\"relation\":");
	keel_buf_add_json_str(&q->b, r->name);
	keel_buf_adds(&q->b, ",\"object\":");
	keel_buf_add_json_str(&q->b, r->object);
	keel_buf_addc(&q->b, ',');
	add_interval(&q->b, r);
	keel_buf_addc(&q->b, '}');
	return 0;
}

static int show_in_cb(void *ud, const struct keel_record *r)
{
	struct query_ctx *q = ud;
	if (!r->linked)
		return 0;
	add_sep(q);
	keel_buf_adds(&q->b, "{\"subject\":");
	keel_buf_add_json_str(&q->b, r->subject);
	keel_buf_adds(&q->b, ",\"relation\":");
	keel_buf_add_json_str(&q->b, r->name);
	keel_buf_addc(&q->b, ',');
	add_interval(&q->b, r);
	keel_buf_addc(&q->b, '}');
	return 0;
}

int keel_show(struct keel_store *s, const char *tenant, const char *subject,
	      const struct keel_read_options *given, char **json)
{
	if (!s || !json)
		return KEEL_EINVAL;
	if (!tenant || !subject)
		return query_bad(s, "show");
	struct keel_read_options o;
	int rc = keel_read_options_take(s, given, &o);
	if (rc)
		return rc;
	int64_t at = o.at;
	struct query_ctx q;
	query_init(&q);
	rc = find_entity(s, &q, tenant, subject, &o);
	if (rc == 0 && at < q.first_seen) {
		/* Nothing can hold for it before the first event that named it:
		 * empty facts would read as "it existed and knew nothing". */
		char tb[KEEL_TIME_BUFSZ], fb[KEEL_TIME_BUFSZ];
		keel_time_format(at, tb);
		keel_time_format(q.first_seen, fb);
		rc = keel_store_fail(s, KEEL_ENOTFOUND,
				     "entity \"%s\" did not exist in tenant \"%s\" at %s "
				     "(first seen %s)",
				     subject, tenant, tb, fb);
	}
	if (rc == 0) {
		struct keel_buf *b = &q.b;
		begin_doc(&q, tenant, subject);
		keel_buf_adds(b, ",\"at\":");
		keel_buf_add_json_time(b, at);
		add_known_at(b, &o);
		keel_buf_adds(b, ",\"kind\":");
		keel_buf_add_json_str(b, q.has_kind
					     ? keel_str_make(q.kind.data, q.kind.len)
					     : KEEL_STR_NULL);
		keel_buf_adds(b, ",\"first_seen\":");
		keel_buf_add_json_time(b, q.first_seen);
		keel_buf_adds(b, ",\"last_seen\":");
		keel_buf_add_json_time(b, q.last_seen);

		struct keel_scan sc = {.type = KEEL_REC_FACT,
				       .tenant = keel_str_cstr(tenant),
				       .subject = keel_str_cstr(subject),
				       .at_set = true,
				       .at = at};
		keel_scan_known_at(&sc, &o);
		keel_buf_adds(b, ",\"facts\":{");
		q.n = 0;
		rc = keel_store_scan(s, &sc, show_fact_cb, &q);
		if (rc == 0) {
			keel_buf_adds(b, "},\"outgoing\":[");
			sc.type = KEEL_REC_RELATION;
			q.n = 0;
			rc = keel_store_scan(s, &sc, show_out_cb, &q);
		}
		if (rc == 0) {
			keel_buf_adds(b, "],\"incoming\":[");
			sc.subject = KEEL_STR_NULL;
			sc.object = keel_str_cstr(subject);
			q.n = 0;
			rc = keel_store_scan(s, &sc, show_in_cb, &q);
		}
		keel_buf_adds(b, "]}");
	}
	return query_finish(&q, rc, json);
}

/* --------------------------------------------------------------- history */

bool keel_history_keeps(const struct keel_read_options *o, int64_t valid_from,
			int64_t valid_to)
{
	if (o->to_set && valid_from >= o->to)
		return false;
	/* a row emptied at a moment ([t, t)) counts at that moment */
	return !o->from_set || valid_to > o->from || valid_from >= o->from;
}

void keel_history_window_init(struct keel_history_window *w, size_t limit)
{
	memset(w, 0, sizeof *w);
	w->limit = limit;
	keel_buf_init(&w->rows);
	keel_buf_init(&w->key);
}

void keel_history_window_free(struct keel_history_window *w)
{
	keel_buf_free(&w->rows);
	keel_buf_free(&w->key);
	free(w->offs);
}

/* Starts the next row of the timeline key[0..len): returns the buffer to
 * write it into (without a separator). Without a limit that is the
 * document itself; with one, the window, whose earlier timeline is first
 * handed to the document. */
struct keel_buf *keel_history_window_row(struct keel_history_window *w,
					 struct keel_buf *doc, size_t *written,
					 const char *key, size_t len)
{
	if (!w->limit) {
		if ((*written)++)
			keel_buf_addc(doc, ',');
		return doc;
	}
	if (w->n && (w->key.len != len || (len && memcmp(w->key.data, key, len) != 0)))
		keel_history_window_flush(w, doc, written);
	if (!w->n) {
		keel_buf_reset(&w->key);
		keel_buf_add(&w->key, key, len);
	}
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 16;
		w->offs = keel_xrealloc(w->offs, w->cap * sizeof *w->offs);
	}
	w->offs[w->n++] = w->rows.len;
	return &w->rows;
}

void keel_history_window_flush(struct keel_history_window *w, struct keel_buf *doc,
			       size_t *written)
{
	if (!w->n)
		return;
	size_t first = w->n > w->limit ? w->n - w->limit : 0;
	w->omitted += first;
	for (size_t i = first; i < w->n; i++) {
		size_t end = i + 1 < w->n ? w->offs[i + 1] : w->rows.len;
		if ((*written)++)
			keel_buf_addc(doc, ',');
		keel_buf_add(doc, w->rows.data + w->offs[i], end - w->offs[i]);
	}
	w->n = 0;
	keel_buf_reset(&w->rows);
}

struct history_ctx {
	struct query_ctx *q;
	const struct keel_read_options *o;
	struct keel_history_window w;
};

static int history_fact_cb(void *ud, const struct keel_record *r)
{
	struct history_ctx *h = ud;
	if (!keel_history_keeps(h->o, r->valid_from, r->valid_to))
		return 0;
	struct keel_buf *b =
	    keel_history_window_row(&h->w, &h->q->b, &h->q->n, r->name.ptr, r->name.len);
	keel_buf_adds(b, "{\"predicate\":");
	keel_buf_add_json_str(b, r->name);
	keel_buf_adds(b, ",\"value\":");
	keel_buf_add_json_raw(b, r->value);
	keel_buf_addc(b, ',');
	add_interval(b, r);
	keel_buf_adds(b, ",\"closed_by\":");
	keel_buf_add_json_ref(b, r->closed_by);
	keel_buf_addc(b, '}');
	return 0;
}

static int history_rel_cb(void *ud, const struct keel_record *r)
{
	struct history_ctx *h = ud;
	if (!keel_history_keeps(h->o, r->valid_from, r->valid_to))
		return 0;
	/* a relation's timeline is its name and object */
	struct keel_buf key;
	keel_buf_init(&key);
	keel_buf_add(&key, r->name.ptr, r->name.len);
	keel_buf_addc(&key, '\0');
	keel_buf_add(&key, r->object.ptr, r->object.len);
	struct keel_buf *b =
	    keel_history_window_row(&h->w, &h->q->b, &h->q->n, key.data, key.len);
	keel_buf_free(&key);
	keel_buf_adds(b, "{\"relation\":");
	keel_buf_add_json_str(b, r->name);
	keel_buf_adds(b, ",\"object\":");
	keel_buf_add_json_str(b, r->object);
	keel_buf_adds(b, r->linked ? ",\"linked\":true," : ",\"linked\":false,");
	add_interval(b, r);
	keel_buf_adds(b, ",\"closed_by\":");
	keel_buf_add_json_ref(b, r->closed_by);
	keel_buf_addc(b, '}');
	return 0;
}

/* ,"from":..,"to":..,"limit":.. as far as asked for. */
static void add_history_range(struct keel_buf *b, const struct keel_read_options *o)
{
	if (o->from_set) {
		keel_buf_adds(b, ",\"from\":");
		keel_buf_add_json_time(b, o->from);
	}
	if (o->to_set) {
		keel_buf_adds(b, ",\"to\":");
		keel_buf_add_json_time(b, o->to);
	}
	if (o->limit)
		keel_buf_addf(b, ",\"limit\":%zu", o->limit);
}

int keel_history(struct keel_store *s, const char *tenant, const char *subject,
		 const char *predicate, const struct keel_read_options *given, char **json)
{
	if (!s || !json)
		return KEEL_EINVAL;
	if (!tenant || !subject)
		return query_bad(s, "history");
	struct keel_read_options o;
	int rc = keel_read_options_take(s, given, &o);
	if (rc)
		return rc;
	if (o.from_set && o.to_set && o.from >= o.to) {
		char fb[KEEL_TIME_BUFSZ], tb[KEEL_TIME_BUFSZ];
		keel_time_format(o.from, fb);
		keel_time_format(o.to, tb);
		return keel_store_fail(
		    s, KEEL_EINVAL,
		    "from %s is not before to %s: no row can be in between", fb, tb);
	}
	struct query_ctx q;
	query_init(&q);
	rc = find_entity(s, &q, tenant, subject, &o);
	uint64_t omitted[2] = {0, 0};
	if (rc == 0) {
		struct keel_buf *b = &q.b;
		begin_doc(&q, tenant, subject);
		keel_buf_adds(b, ",\"predicate\":");
		keel_buf_add_json_str(b, predicate ? keel_str_cstr(predicate)
						   : KEEL_STR_NULL);
		add_known_at(b, &o);
		add_history_range(b, &o);
	}
	if (rc == 0 && o.changes) {
		rc = keel_query_changes(s, tenant, subject, predicate, &o, &q.b, omitted);
	} else if (rc == 0) {
		struct keel_buf *b = &q.b;
		struct keel_scan sc = {.type = KEEL_REC_FACT,
				       .tenant = keel_str_cstr(tenant),
				       .subject = keel_str_cstr(subject),
				       .name = predicate ? keel_str_cstr(predicate)
							 : KEEL_STR_NULL};
		keel_scan_known_at(&sc, &o);
		struct history_ctx h = {.q = &q, .o = &o};
		static const enum keel_record_type types[] = {KEEL_REC_FACT,
							      KEEL_REC_RELATION};
		for (size_t i = 0; rc == 0 && i < KEEL_ARRAY_LEN(types); i++) {
			keel_buf_adds(b, i == 0 ? ",\"facts\":[" : ",\"relations\":[");
			keel_history_window_init(&h.w, o.limit);
			sc.type = types[i];
			q.n = 0;
			rc = keel_store_scan(
			    s, &sc, i == 0 ? history_fact_cb : history_rel_cb, &h);
			keel_history_window_flush(&h.w, b, &q.n);
			omitted[i] = h.w.omitted;
			keel_history_window_free(&h.w);
			keel_buf_addc(b, ']');
		}
	}
	if (rc == 0) {
		/* what --limit left out, so that a reader knows there is more */
		if (o.limit)
			keel_buf_addf(&q.b,
				      ",\"omitted\":{\"facts\":%llu,\"relations\":%llu}",
				      (unsigned long long)omitted[0],
				      (unsigned long long)omitted[1]);
		keel_buf_addc(&q.b, '}');
	}
	return query_finish(&q, rc, json);
}

/* ------------------------------------------------------------------- why */

static int why_row_cb(void *ud, const struct keel_record *r)
{
	struct query_ctx *q = ud;
	if (r->valid_from == r->valid_to)
		return 0; /* an emptied row holds nothing at any time */
	q->found = true;
	keel_buf_adds(&q->b, ",\"value\":");
	keel_buf_add_json_raw(&q->b, r->value);
	keel_buf_addc(&q->b, ',');
	add_interval(&q->b, r);
	keel_buf_adds(&q->b, ",\"closed_by\":");
	keel_buf_add_json_ref(&q->b, r->closed_by);
	keel_buf_reset(&q->asserted_source);
	keel_buf_addstr(&q->asserted_source, r->asserted_by.source);
	keel_buf_reset(&q->asserted_id);
	keel_buf_addstr(&q->asserted_id, r->asserted_by.id);
	return 1; /* at most one row contains a time */
}

static int why_event_cb(void *ud, const struct keel_record *r)
{
	struct query_ctx *q = ud;
	q->found = true;
	keel_buf_adds(&q->b, "{\"source\":");
	keel_buf_add_json_str(&q->b, r->source);
	keel_buf_adds(&q->b, ",\"id\":");
	keel_buf_add_json_str(&q->b, r->id);
	keel_buf_adds(&q->b, ",\"event_type\":");
	keel_buf_add_json_str(&q->b, r->event_type);
	keel_buf_adds(&q->b, ",\"time\":");
	keel_buf_add_json_time(&q->b, r->time);
	keel_buf_adds(&q->b, ",\"envelope\":");
	keel_buf_add_json_raw(&q->b, r->envelope);
	keel_buf_addc(&q->b, '}');
	return 1;
}

int keel_why(struct keel_store *s, const char *tenant, const char *subject,
	     const char *predicate, const struct keel_read_options *given, char **json)
{
	if (!s || !json)
		return KEEL_EINVAL;
	if (!tenant || !subject || !predicate)
		return query_bad(s, "why");
	struct keel_read_options o;
	int rc = keel_read_options_take(s, given, &o);
	if (rc)
		return rc;
	int64_t at = o.at;
	struct query_ctx q;
	query_init(&q);
	rc = find_entity(s, &q, tenant, subject, &o);
	if (rc == 0) {
		struct keel_buf *b = &q.b;
		begin_doc(&q, tenant, subject);
		keel_buf_adds(b, ",\"predicate\":");
		keel_buf_add_json_str(b, keel_str_cstr(predicate));
		keel_buf_adds(b, ",\"at\":");
		keel_buf_add_json_time(b, at);
		add_known_at(b, &o);
		struct keel_scan sc = {.type = KEEL_REC_FACT,
				       .tenant = keel_str_cstr(tenant),
				       .subject = keel_str_cstr(subject),
				       .name = keel_str_cstr(predicate),
				       .at_set = true,
				       .at = at};
		keel_scan_known_at(&sc, &o);
		q.found = false;
		rc = keel_store_scan(s, &sc, why_row_cb, &q);
		if (rc == 1)
			rc = 0;
		if (rc == 0 && !q.found) {
			char tb[KEEL_TIME_BUFSZ];
			keel_time_format(at, tb);
			rc = keel_store_fail(s, KEEL_ENOTFOUND,
					     "entity \"%s\" in tenant \"%s\" has no "
					     "\"%s\" at %s",
					     subject, tenant, predicate, tb);
		}
	}
	if (rc == 0) {
		struct keel_scan ev = {
		    .type = KEEL_REC_EVENT,
		    .tenant = keel_str_cstr(tenant),
		    .event_source = keel_str_make(q.asserted_source.data ? q.asserted_source.data : "",
						  q.asserted_source.len),
		    .event_id = keel_str_make(q.asserted_id.data, q.asserted_id.len)};
		keel_scan_known_at(&ev, &o);
		keel_buf_adds(&q.b, ",\"event\":");
		q.found = false;
		rc = keel_store_scan(s, &ev, why_event_cb, &q);
		if (rc == 1)
			rc = 0;
		if (rc == 0 && !q.found)
			keel_buf_add(&q.b, "null", 4); /* not in the log */
		keel_buf_addc(&q.b, '}');
	}
	return query_finish(&q, rc, json);
}

/* ----------------------------------------------------------------- stats */

static void add_counts(struct keel_buf *b, const uint64_t c[4])
{
	keel_buf_addf(b,
		      "\"entities\":%llu,\"facts\":%llu,\"relations\":%llu,"
		      "\"events\":%llu",
		      (unsigned long long)c[0], (unsigned long long)c[1],
		      (unsigned long long)c[2], (unsigned long long)c[3]);
}

int keel_stats(struct keel_store *s, const char *tenant,
	       const struct keel_read_options *given, char **json)
{
	if (!s || !json)
		return KEEL_EINVAL;
	struct keel_read_options o;
	int rc = keel_read_options_take(s, given, &o);
	if (rc)
		return rc;
	int64_t known_at = o.known_at_set ? o.known_at : KEEL_TIME_INF;
	struct query_ctx q;
	query_init(&q);
	struct keel_ptrvec names = {0};
	if (tenant)
		keel_ptrvec_push(&names, keel_xstrdup(tenant));
	else
		rc = keel_store_tenants(s, &names);

	uint64_t total[4] = {0};
	keel_buf_addc(&q.b, '{');
	if (o.known_at_set) {
		keel_buf_adds(&q.b, "\"known_at\":");
		keel_buf_add_json_time(&q.b, o.known_at);
		keel_buf_addc(&q.b, ',');
	}
	keel_buf_adds(&q.b, "\"tenants\":[");
	for (size_t i = 0; rc == 0 && i < names.len; i++) {
		uint64_t c[4];
		rc = keel_store_counts(s, keel_str_cstr(names.items[i]), known_at, c);
		if (rc)
			break;
		/* Listing every tenant, one with nothing recorded yet at
		 * known_at did not exist then. */
		if (!tenant && !(c[0] || c[1] || c[2] || c[3]))
			continue;
		if (tenant && !(c[0] || c[1] || c[2] || c[3])) {
			rc = keel_store_tenant_known(s, keel_str_cstr(tenant), known_at);
			if (rc == 0) /* recorded in between: still none then */
				rc = keel_store_fail(s, KEEL_ENOTFOUND,
						     "tenant \"%s\" not found", tenant);
			break;
		}
		for (int k = 0; k < 4; k++)
			total[k] += c[k];
		add_sep(&q);
		keel_buf_adds(&q.b, "{\"tenant\":");
		keel_buf_add_json_str(&q.b, keel_str_cstr(names.items[i]));
		keel_buf_addc(&q.b, ',');
		add_counts(&q.b, c);
		keel_buf_addc(&q.b, '}');
	}
	keel_buf_adds(&q.b, "],\"total\":{");
	add_counts(&q.b, total);
	keel_buf_adds(&q.b, "}}");

	for (size_t i = 0; i < names.len; i++)
		free(names.items[i]);
	keel_ptrvec_free(&names);
	return query_finish(&q, rc, json);
}

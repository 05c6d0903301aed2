/*
 * load.c - keel load, the inverse of the canonical dump (docs/dump.md).
 *
 * Load reads a dump line by line, validates every record (shape, field
 * rules, canonical order, timelines that tile) and appends the records
 * through the store's ordinary append in batches, one transaction each:
 * an entity becomes one mention, a row one assertion, an event is logged
 * as accepted in dump order. A store derives valid_to and closed_by from
 * the order in which a timeline's assertions arrived, so load restores
 * that order: within one valid_from the emptied rows [t, t) are chained
 * by their closed_by to the row that won it, and every closed_by must
 * name the next assertion (docs/dump.md).
 */
#include "keel.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "append.h"
#include "cartridge/cartridge.h"
#include "event/batch.h"
#include "event/envelope.h"
#include "event/json.h"
#include "event/json_write.h"
#include "store/store.h"
#include "store/timeline.h"
#include "util.h"

/* Records per load transaction. */
#define LOAD_BATCH 4096

/* The previous record, kept to check the canonical order and that each
 * timeline's non-empty rows tile [first valid_from, +inf). */
struct load_prev {
	bool any;
	int type; /* enum keel_record_type */
	struct keel_buf tenant, subject, name, object, asserted_source, asserted_id;
	int64_t valid_from, valid_to;
	/* The current timeline's last non-empty row. */
	bool have_row;
	int64_t row_to;
	uint64_t row_line;
};

struct load_ctx {
	struct keel_store *s;
	struct keel_json_doc doc;  /* the line */
	struct keel_json_doc edoc; /* its envelope, compacted */
	struct keel_append_builder ab; /* the open batch's rows and mentions */
	struct keel_arena arena;       /* the open batch's events */
	struct keel_ptrvec events; /* struct keel_batch_event *, in the arena */
	/* The open run: a timeline's rows of one valid_from, in dump order,
	 * until the run ends (it may span two batches). */
	struct load_run_row *run;
	size_t nrun, run_cap;
	struct keel_arena run_arena;
	/* The last run's winning row was closed: the next run (of the same
	 * timeline, tiling checks that) must begin with the assertion its
	 * closed_by names. */
	bool chain_open;
	struct keel_buf chain_source, chain_id;
	uint64_t chain_line;
	struct keel_map event_ids; /* identities of the events in this batch */
	/* A dump of an older Keel names events by id alone (a string
	 * asserted_by): each id's source, from the dump's own event records
	 * ahead (load_old_index), built when the first such reference comes. */
	FILE *in;
	bool old_indexed;
	bool old_form; /* the current tenant's rows are in the older form */
	struct keel_map old_sources; /* (tenant, id) -> struct load_old_event */
	struct keel_arena old_arena;
	struct keel_buf tmp;
	struct keel_buf msg;
	struct keel_buf why;
	struct load_prev prev;
	/* The hashes of the current tenant's entity subjects: every fact's
	 * and relation's subject, and every relation's object, must be one
	 * (ingestion upserts one for each, docs/semantics.md). 16 bytes an entity; a
	 * collision can only let a missing entity pass, never fail a good
	 * dump. */
	struct keel_map entities;
	size_t records;	     /* records in the open batch */
	uint64_t first_line; /* first line of the open batch */
	uint64_t line;
};

/* One row of the open run. */
struct load_run_row {
	struct keel_assertion a; /* strings in run_arena */
	int64_t valid_to;
	struct keel_event_ref closed_by;
	uint64_t line;
	bool used;
};

/* Fails the load with a message naming the line. */
static int load_fail(struct load_ctx *L, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int load_fail(struct load_ctx *L, const char *fmt, ...)
{
	keel_buf_reset(&L->msg);
	va_list ap;
	va_start(ap, fmt);
	keel_buf_vaddf(&L->msg, fmt, ap);
	va_end(ap);
	return keel_store_fail(L->s, KEEL_EDUMP, "line %llu: %s",
			       (unsigned long long)L->line, L->msg.data);
}

static const char *const record_names[] = {"entity", "fact", "relation", "event"};

/* Field accessors: each fails with a message naming the field and rule. */

static int field_str(struct load_ctx *L, const struct keel_json *obj, const char *key,
		     size_t min, size_t max, bool nullable, struct keel_str *out)
{
	const struct keel_json *v = keel_json_get(obj, key, strlen(key));
	if (!v)
		return load_fail(L, "field \"%s\": missing", key);
	if (v->type == KEEL_JSON_NULL && nullable) {
		*out = KEEL_STR_NULL;
		return 0;
	}
	if (v->type != KEEL_JSON_STRING)
		return load_fail(L, "field \"%s\": expected a string%s", key,
				 nullable ? " or null" : "");
	if (v->len < min || v->len > max)
		return load_fail(L, "field \"%s\": length must be %zu-%zu bytes", key,
				 min, max);
	*out = keel_str_make(v->str, v->len);
	return 0;
}

static int field_time(struct load_ctx *L, const struct keel_json *obj, const char *key,
		      bool nullable, int64_t *out)
{
	const struct keel_json *v = keel_json_get(obj, key, strlen(key));
	if (!v)
		return load_fail(L, "field \"%s\": missing", key);
	if (v->type == KEEL_JSON_NULL && nullable) {
		*out = KEEL_TIME_INF;
		return 0;
	}
	const char *why = NULL;
	if (v->type != KEEL_JSON_STRING)
		return load_fail(L, "field \"%s\": expected a timestamp%s", key,
				 nullable ? " or null" : "");
	if (keel_time_parse(v->str, v->len, out, &why))
		return load_fail(L, "field \"%s\": not an RFC 3339 timestamp (%s)", key,
				 why ? why : "invalid");
	return 0;
}

static bool tenant_name_ok(struct keel_str t)
{
	if (t.len < 1 || t.len > KEEL_TENANT_MAX)
		return false;
	for (size_t i = 0; i < t.len; i++) {
		char c = t.ptr[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* Every member must be one of the record type's fields. */
static int check_members(struct load_ctx *L, const struct keel_json *obj,
			 const char *const *keys, size_t nkeys, const char *what)
{
	for (const struct keel_json *m = obj->child; m; m = m->next) {
		size_t i = 0;
		while (i < nkeys && !(strlen(keys[i]) == m->key_len &&
				      memcmp(keys[i], m->key, m->key_len) == 0))
			i++;
		if (i == nkeys)
			return load_fail(L, "field \"%.*s\": not a field of %s records",
					 (int)m->key_len, m->key, what);
	}
	return 0;
}

static void prev_set(struct keel_buf *b, struct keel_str s)
{
	keel_buf_reset(b);
	if (s.ptr)
		keel_buf_add(b, s.ptr, s.len);
}

static struct keel_str prev_get(const struct keel_buf *b)
{
	return keel_str_make(b->data ? b->data : "", b->len);
}

static int cmp_i64(int64_t a, int64_t b)
{
	return (a > b) - (a < b);
}

/* Canonical order within one record type; see docs/dump.md. Returns <0, 0, >0
 * comparing the previous record's key with the current one's. */
static int order_cmp(const struct load_prev *p, int type, struct keel_str subject,
		     struct keel_str name, struct keel_str object, int64_t from,
		     int64_t to, struct keel_event_ref asserted_by, bool old_form)
{
	int c = keel_str_cmp(prev_get(&p->subject), subject);
	if (c || type == KEEL_REC_ENTITY)
		return c;
	if ((c = keel_str_cmp(prev_get(&p->name), name)))
		return c;
	if (type == KEEL_REC_RELATION && (c = keel_str_cmp(prev_get(&p->object), object)))
		return c;
	if ((c = cmp_i64(p->valid_from, from)) || (c = cmp_i64(p->valid_to, to)))
		return c;
	/* An older Keel's dump sorted by id alone. */
	if (!old_form && (c = keel_str_cmp(prev_get(&p->asserted_source), asserted_by.source)))
		return c;
	return keel_str_cmp(prev_get(&p->asserted_id), asserted_by.id);
}

/* Checks the record's place in the dump: tenants ascending, record types
 * in order within a tenant, canonical order within a type; checks that a
 * tenant about to be loaded holds nothing yet; tracks timelines. */
static int load_check_order(struct load_ctx *L, int type, struct keel_str tenant,
			    struct keel_str subject, struct keel_str name,
			    struct keel_str object, int64_t from, int64_t to,
			    struct keel_event_ref asserted_by)
{
	struct load_prev *p = &L->prev;
	bool new_tenant = !p->any;
	if (p->any) {
		int c = keel_str_cmp(prev_get(&p->tenant), tenant);
		if (c > 0)
			return load_fail(L,
					 "tenant \"%.*s\" out of order (the dump is "
					 "sorted by tenant)",
					 (int)tenant.len, tenant.ptr);
		new_tenant = c != 0;
	}
	if (new_tenant) {
		uint64_t counts[4];
		int rc = keel_store_counts(L->s, tenant, KEEL_TIME_INF, counts);
		if (rc)
			return rc;
		if (counts[0] || counts[1] || counts[2] || counts[3])
			return load_fail(L,
					 "tenant \"%.*s\" already has data in the store",
					 (int)tenant.len, tenant.ptr);
		prev_set(&p->tenant, tenant);
		p->type = -1;
		L->old_form = false;
		keel_map_clear(&L->entities);
	}
	bool same_key = false;
	if (type < p->type) {
		return load_fail(L,
				 "%s record after %s records (the order is entity, "
				 "fact, relation, event)",
				 record_names[type], record_names[p->type]);
	} else if (type == p->type && type != KEEL_REC_EVENT) {
		int c = order_cmp(p, type, subject, name, object, from, to, asserted_by,
				  L->old_form);
		if (c > 0 || (c == 0 && type == KEEL_REC_ENTITY))
			return load_fail(L, "%s record out of order%s",
					 record_names[type],
					 c == 0 ? " (duplicate subject)" : "");
		same_key =
		    keel_str_eq(prev_get(&p->subject), subject) &&
		    keel_str_eq(prev_get(&p->name), name) &&
		    (type == KEEL_REC_FACT || keel_str_eq(prev_get(&p->object), object));
	}

	if (type == KEEL_REC_FACT || type == KEEL_REC_RELATION) {
		/* A new timeline: the previous one must have ended open. */
		if (!same_key && p->have_row && p->row_to != KEEL_TIME_INF)
			return load_fail(L,
					 "the timeline of line %llu ends with a closed "
					 "row (its last non-empty row must be open)",
					 (unsigned long long)p->row_line);
		if (!same_key)
			p->have_row = false;
		if (from != to) {
			if (p->have_row && p->row_to != from)
				return load_fail(L,
						 "row does not start where the previous "
						 "row of its timeline ends");
			p->have_row = true;
			p->row_to = to;
			p->row_line = L->line;
		}
	} else if (p->have_row && p->row_to != KEEL_TIME_INF) {
		return load_fail(L,
				 "the timeline of line %llu ends with a closed row "
				 "(its last non-empty row must be open)",
				 (unsigned long long)p->row_line);
	} else {
		p->have_row = false;
	}
	p->any = true;
	p->type = type;
	prev_set(&p->subject, subject);
	prev_set(&p->name, name);
	prev_set(&p->object, object);
	prev_set(&p->asserted_source, asserted_by.source);
	prev_set(&p->asserted_id, asserted_by.id);
	p->valid_from = from;
	p->valid_to = to;
	return 0;
}

static bool load_same_timeline(const struct keel_assertion *a, const struct keel_assertion *b)
{
	return a->kind == b->kind && keel_str_eq(a->tenant, b->tenant) &&
	       keel_str_eq(a->subject, b->subject) && keel_str_eq(a->name, b->name) &&
	       keel_str_eq(a->object, b->object);
}

/* Ends the open run: puts its rows in the order they must have arrived
 * (each emptied row closed by the next, the winner last) and adds them to
 * the batch; fails where no arrival order gives the dump's closed_by. */
static int load_run_flush(struct load_ctx *L)
{
	size_t n = L->nrun;
	if (!n)
		return 0;
	uint64_t line = L->line;
	struct load_run_row *win = &L->run[n - 1];
	int rc = 0;
	struct load_run_row **order = keel_xmalloc(n * sizeof *order);
	if (win->valid_to == win->a.valid_from) {
		L->line = win->line;
		rc = load_fail(L, "empty row: no row of its timeline begins at its "
				  "valid_from after it");
	}
	/* From the winner back: the emptied row closed by the current one. */
	order[n - 1] = win;
	for (size_t k = n - 1; rc == 0 && k-- > 0;) {
		struct load_run_row *prev = NULL;
		for (size_t i = 0; i + 1 < n && !prev; i++)
			if (!L->run[i].used &&
			    keel_event_ref_eq(L->run[i].closed_by, order[k + 1]->a.asserted_by))
				prev = &L->run[i];
		if (!prev) {
			for (size_t i = 0; i + 1 < n; i++)
				if (!L->run[i].used)
					L->line = L->run[i].line;
			rc = load_fail(L, "field \"closed_by\": names no assertion that "
					  "follows it on its timeline");
			break;
		}
		prev->used = true;
		order[k] = prev;
	}
	struct keel_event_ref chain = {prev_get(&L->chain_source), prev_get(&L->chain_id)};
	if (rc == 0 && L->chain_open && !keel_event_ref_eq(chain, order[0]->a.asserted_by)) {
		L->line = L->chain_line;
		rc = load_fail(L, "field \"closed_by\": is not the event asserting the "
				  "next row of its timeline");
	}
	for (size_t i = 0; rc == 0 && i < n; i++)
		keel_append_add_row(&L->ab, &order[i]->a);
	free(order);
	L->chain_open = rc == 0 && win->valid_to != KEEL_TIME_INF;
	if (L->chain_open) {
		prev_set(&L->chain_source, win->closed_by.source);
		prev_set(&L->chain_id, win->closed_by.id);
		L->chain_line = win->line;
	}
	L->nrun = 0;
	keel_arena_reset(&L->run_arena);
	if (rc == 0)
		L->line = line;
	return rc;
}

/* Adds a row to the open run, ending the run first if the row begins
 * another. */
static int load_run_add(struct load_ctx *L, const struct keel_assertion *a, int64_t to,
			struct keel_event_ref closed_by)
{
	if (L->nrun && (!load_same_timeline(&L->run[0].a, a) ||
			L->run[0].a.valid_from != a->valid_from)) {
		bool same = load_same_timeline(&L->run[0].a, a);
		int rc = load_run_flush(L);
		if (rc)
			return rc;
		if (!same)
			L->chain_open = false;
	}
	if (L->nrun == L->run_cap) {
		L->run_cap = L->run_cap ? 2 * L->run_cap : 8;
		L->run = keel_xrealloc(L->run, L->run_cap * sizeof *L->run);
	}
	struct keel_arena *ar = &L->run_arena;
	struct load_run_row *r = &L->run[L->nrun++];
	r->a = *a;
	r->a.tenant = keel_arena_str(ar, a->tenant);
	r->a.subject = keel_arena_str(ar, a->subject);
	r->a.name = keel_arena_str(ar, a->name);
	r->a.object = a->object.ptr ? keel_arena_str(ar, a->object) : a->object;
	r->a.value = a->value.ptr ? keel_arena_str(ar, a->value) : a->value;
	r->a.asserted_by.source = keel_arena_str(ar, a->asserted_by.source);
	r->a.asserted_by.id = keel_arena_str(ar, a->asserted_by.id);
	r->valid_to = to;
	r->closed_by = closed_by;
	if (closed_by.id.ptr) {
		r->closed_by.source = keel_arena_str(ar, closed_by.source);
		r->closed_by.id = keel_arena_str(ar, closed_by.id);
	}
	r->line = L->line;
	r->used = false;
	return 0;
}

/* An event of an older Keel's dump, found by (tenant, id). */
struct load_old_event {
	struct keel_str tenant, id, source;
};

/* Indexes the event records from here to the end of the input, then goes
 * back: an older dump's rows name events by id, and a tenant's event
 * records follow its rows. */
static int load_old_index(struct load_ctx *L)
{
	off_t here = ftello(L->in);
	if (here < 0)
		return load_fail(L, "a dump written by an older Keel (asserted_by a "
				    "string) can only be loaded from a file, not a pipe");
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	char *line = NULL;
	size_t cap = 0;
	ssize_t got;
	while ((got = getline(&line, &cap, L->in)) >= 0) {
		struct keel_json_error jerr;
		const struct keel_json *t, *tenant, *id, *env, *src;
		if (keel_json_parse(&doc, line, (size_t)got, &jerr) ||
		    doc.root->type != KEEL_JSON_OBJECT ||
		    !(t = keel_json_get(doc.root, "type", 4)) || t->type != KEEL_JSON_STRING ||
		    !keel_str_eq(keel_str_make(t->str, t->len), keel_str_cstr("event")) ||
		    !(tenant = keel_json_get(doc.root, "tenant", 6)) ||
		    tenant->type != KEEL_JSON_STRING ||
		    !(id = keel_json_get(doc.root, "id", 2)) || id->type != KEEL_JSON_STRING ||
		    !(env = keel_json_get(doc.root, "envelope", 8)) ||
		    env->type != KEEL_JSON_OBJECT)
			continue; /* the load itself reports what is wrong */
		src = keel_json_get(env, "source", 6);
		struct load_old_event *e = keel_arena_alloc(&L->old_arena, sizeof *e);
		e->tenant = keel_arena_str(&L->old_arena, keel_str_make(tenant->str, tenant->len));
		e->id = keel_arena_str(&L->old_arena, keel_str_make(id->str, id->len));
		e->source = src && src->type == KEEL_JSON_STRING
				? keel_arena_str(&L->old_arena, keel_str_make(src->str, src->len))
				: keel_str_make("", 0);
		keel_map_put(&L->old_sources, keel_event_key_hash(e->tenant, keel_str_make("", 0), e->id),
			     e);
	}
	free(line);
	keel_json_doc_free(&doc);
	if (ferror(L->in) || fseeko(L->in, here, SEEK_SET) != 0)
		return keel_store_fail(L->s, KEEL_EIO, "cannot read the dump again: %s",
				       strerror(errno));
	L->old_indexed = true;
	return 0;
}

/* A reference to an event: {"source":S,"id":I}, null where nullable, or
 * an older Keel's id alone, whose source its event record gives. */
static int field_ref(struct load_ctx *L, const struct keel_json *obj,
		     struct keel_str tenant, const char *key, bool nullable,
		     struct keel_event_ref *out)
{
	*out = KEEL_EVENT_REF_NONE;
	const struct keel_json *v = keel_json_get(obj, key, strlen(key));
	if (v && v->type == KEEL_JSON_OBJECT) {
		static const char *const keys[] = {"source", "id"};
		int rc;
		for (const struct keel_json *m = v->child; m; m = m->next) {
			size_t i = 0;
			while (i < 2 && !(strlen(keys[i]) == m->key_len &&
					  memcmp(keys[i], m->key, m->key_len) == 0))
				i++;
			if (i == 2)
				return load_fail(L, "field \"%s\": member \"%.*s\" is not "
						    "\"source\" or \"id\"",
						 key, (int)m->key_len, m->key);
		}
		if ((rc = field_str(L, v, "source", 0, KEEL_SOURCE_MAX, false, &out->source)) ||
		    (rc = field_str(L, v, "id", 1, KEEL_ID_MAX, false, &out->id)))
			return rc;
		return 0;
	}
	if (!v)
		return load_fail(L, "field \"%s\": missing", key);
	if (v->type == KEEL_JSON_NULL && nullable)
		return 0;
	if (v->type != KEEL_JSON_STRING)
		return load_fail(L, "field \"%s\": expected {\"source\":S,\"id\":I}%s", key,
				 nullable ? " or null" : "");
	/* The older form. */
	int rc;
	if ((rc = field_str(L, obj, key, 1, KEEL_ID_MAX, false, &out->id)))
		return rc;
	if (!L->old_indexed && (rc = load_old_index(L)))
		return rc;
	L->old_form = true;
	uint64_t h = keel_event_key_hash(tenant, keel_str_make("", 0), out->id);
	for (size_t i = keel_map_first(&L->old_sources, h); i != SIZE_MAX;
	     i = keel_map_next(&L->old_sources, h, i)) {
		const struct load_old_event *e = L->old_sources.values[i];
		if (keel_str_eq(e->id, out->id) && keel_str_eq(e->tenant, tenant)) {
			out->source = e->source;
			return 0;
		}
	}
	return load_fail(L, "field \"%s\": event \"%.*s\" has no event record in the "
			    "tenant",
			 key, (int)out->id.len, out->id.ptr);
}

static uint64_t load_entity_hash(struct keel_str subject)
{
	return keel_hash64(subject.ptr, subject.len, 0x656e74);
}

/* Fails unless the tenant's entity records named subject. */
static int load_check_entity(struct load_ctx *L, const char *record, const char *field,
			     struct keel_str subject)
{
	if (keel_map_first(&L->entities, load_entity_hash(subject)) != SIZE_MAX)
		return 0;
	return load_fail(L, "%s %s \"%.*s\" has no entity record", record, field,
			 (int)subject.len, subject.ptr);
}

static int load_entity(struct load_ctx *L, const struct keel_json *obj,
		       struct keel_str tenant)
{
	static const char *const keys[] = {"type", "tenant",	 "subject",
					   "kind", "first_seen", "last_seen"};
	struct keel_str subject, kind;
	int64_t first, last;
	int rc;
	if ((rc = check_members(L, obj, keys, KEEL_ARRAY_LEN(keys), "entity")) ||
	    (rc = field_str(L, obj, "subject", 1, KEEL_SUBJECT_MAX, false, &subject)) ||
	    (rc = field_str(L, obj, "kind", 1, KEEL_NAME_MAX, true, &kind)) ||
	    (rc = field_time(L, obj, "first_seen", false, &first)) ||
	    (rc = field_time(L, obj, "last_seen", false, &last)))
		return rc;
	if (first > last)
		return load_fail(L, "field \"last_seen\": earlier than first_seen");
	if ((rc = load_check_order(L, KEEL_REC_ENTITY, tenant, subject, KEEL_STR_NULL,
				   KEEL_STR_NULL, 0, 0, KEEL_EVENT_REF_NONE)))
		return rc;

	keel_map_put(&L->entities, load_entity_hash(subject), NULL);
	/* The dump does not carry the time of the mention that gave the kind;
	 * first_seen is the earliest it can have been (docs/dump.md). */
	struct keel_mention m = {.tenant = tenant,
				 .subject = subject,
				 .kind = kind,
				 .kind_time = kind.ptr ? first : 0,
				 .first_seen = first,
				 .last_seen = last};
	keel_append_add_mention(&L->ab, &m);
	return 0;
}

static int load_row(struct load_ctx *L, const struct keel_json *obj,
		    struct keel_str tenant, enum keel_row_kind kind)
{
	static const char *const fact_keys[] = {"type",	     "tenant",	    "subject",
						"predicate", "value",	    "valid_from",
						"valid_to",  "asserted_by", "closed_by"};
	static const char *const rel_keys[] = {
	    "type",   "tenant",	    "subject",	"relation",    "object",
	    "linked", "valid_from", "valid_to", "asserted_by", "closed_by"};
	bool fact = kind == KEEL_ROW_FACT;
	struct keel_str subject, name, object = KEEL_STR_NULL, value = KEEL_STR_NULL;
	struct keel_event_ref asserted_by, closed_by;
	bool linked = false;
	int64_t from, to;
	int rc;

	if (fact)
		rc = check_members(L, obj, fact_keys, KEEL_ARRAY_LEN(fact_keys), "fact");
	else
		rc =
		    check_members(L, obj, rel_keys, KEEL_ARRAY_LEN(rel_keys), "relation");
	if (rc ||
	    (rc = field_str(L, obj, "subject", 1, KEEL_SUBJECT_MAX, false, &subject)) ||
	    (rc = field_str(L, obj, fact ? "predicate" : "relation", 1, KEEL_NAME_MAX,
			    false, &name)))
		return rc;
	if (fact) {
		const struct keel_json *v = keel_json_get(obj, "value", 5);
		if (!v)
			return load_fail(L, "field \"value\": missing");
		if (v->type != KEEL_JSON_NULL) {
			keel_buf_reset(&L->tmp);
			keel_json_compact(&L->doc, v, &L->tmp);
			if (L->tmp.len > KEEL_VALUE_MAX)
				return load_fail(L,
						 "field \"value\": longer than %d bytes",
						 KEEL_VALUE_MAX);
			value = keel_str_make(L->tmp.data, L->tmp.len);
		}
	} else {
		if ((rc = field_str(L, obj, "object", 1, KEEL_SUBJECT_MAX, false,
				    &object)))
			return rc;
		const struct keel_json *v = keel_json_get(obj, "linked", 6);
		if (!v)
			return load_fail(L, "field \"linked\": missing");
		if (v->type != KEEL_JSON_TRUE && v->type != KEEL_JSON_FALSE)
			return load_fail(L, "field \"linked\": expected true or false");
		linked = v->type == KEEL_JSON_TRUE;
	}
	if ((rc = field_time(L, obj, "valid_from", false, &from)) ||
	    (rc = field_time(L, obj, "valid_to", true, &to)) ||
	    (rc = field_ref(L, obj, tenant, "asserted_by", false, &asserted_by)) ||
	    (rc = field_ref(L, obj, tenant, "closed_by", true, &closed_by)))
		return rc;
	if (from > to)
		return load_fail(L, "field \"valid_to\": earlier than valid_from");
	if ((to == KEEL_TIME_INF) != (closed_by.id.ptr == NULL))
		return load_fail(L, "field \"closed_by\": must be null exactly when "
				    "valid_to is null");
	if ((rc = load_check_order(L, fact ? KEEL_REC_FACT : KEEL_REC_RELATION, tenant,
				   subject, name, object, from, to, asserted_by)) ||
	    (rc = load_check_entity(L, fact ? "fact" : "relation", "subject", subject)) ||
	    (!fact && (rc = load_check_entity(L, "relation", "object", object))))
		return rc;

	struct keel_assertion a = {.kind = kind,
				   .tenant = tenant,
				   .subject = subject,
				   .name = name,
				   .object = object,
				   .value = value,
				   .linked = linked,
				   .valid_from = from,
				   .asserted_by = asserted_by};
	return load_run_add(L, &a, to, closed_by);
}

static int load_event(struct load_ctx *L, const struct keel_json *obj,
		      struct keel_str tenant)
{
	static const char *const keys[] = {"type", "tenant",	 "source",  "id",
					   "event_type", "time", "envelope"};
	struct keel_str source = KEEL_STR_NULL, id, type;
	int64_t time;
	int rc;
	/* An older Keel's event records have no source: the envelope's is
	 * the event's. */
	bool has_source = keel_json_get(obj, "source", 6) != NULL;
	if ((rc = check_members(L, obj, keys, KEEL_ARRAY_LEN(keys), "event")) ||
	    (has_source &&
	     (rc = field_str(L, obj, "source", 0, KEEL_SOURCE_MAX, false, &source))) ||
	    (rc = field_str(L, obj, "id", 1, KEEL_ID_MAX, false, &id)) ||
	    (rc = field_str(L, obj, "event_type", 1, KEEL_TYPE_MAX, false, &type)) ||
	    (rc = field_time(L, obj, "time", false, &time)))
		return rc;
	const struct keel_json *envj = keel_json_get(obj, "envelope", 8);
	if (!envj)
		return load_fail(L, "field \"envelope\": missing");
	if (envj->type != KEEL_JSON_OBJECT)
		return load_fail(L, "field \"envelope\": expected an object");

	/* The envelope must be one Keel accepts, and agree with the record. */
	keel_buf_reset(&L->tmp);
	keel_json_compact(&L->doc, envj, &L->tmp);
	struct keel_json_error jerr;
	struct keel_envelope env;
	keel_buf_reset(&L->why);
	if (keel_json_parse(&L->edoc, L->tmp.data, L->tmp.len, &jerr)) {
		rc = load_fail(L, "field \"envelope\": %s", jerr.msg);
	} else if (keel_envelope_read(&L->edoc, &env, &L->why)) {
		rc = load_fail(L, "field \"envelope\": %s", L->why.data);
	} else if (!keel_str_eq(env.id, id) || !keel_str_eq(env.tenant, tenant) ||
		   !keel_str_eq(env.type, type) || env.time != time ||
		   (has_source && !keel_str_eq(env.source, source))) {
		rc = load_fail(L, "field \"envelope\": its source, id, tenant, type or "
				  "time differs from the record's");
	}
	if (rc == 0 && L->s->max_envelope && L->tmp.len > L->s->max_envelope)
		rc = load_fail(L,
			       "field \"envelope\": %zu bytes (compacted), longer than the "
			       "store takes: at most %zu bytes (%s)",
			       L->tmp.len, L->s->max_envelope, L->s->max_envelope_why);
	if (rc)
		return rc;
	if ((rc = load_check_order(L, KEEL_REC_EVENT, tenant, KEEL_STR_NULL,
				   KEEL_STR_NULL, KEEL_STR_NULL, 0, 0, KEEL_EVENT_REF_NONE)))
		return rc;

	/* Identities are unique within a tenant; a batch may hold two
	 * tenants. */
	source = env.source;
	uint64_t h = keel_event_key_hash(tenant, source, id);
	for (size_t i = keel_map_first(&L->event_ids, h); i != SIZE_MAX;
	     i = keel_map_next(&L->event_ids, h, i)) {
		const struct keel_batch_event *o = L->event_ids.values[i];
		if (keel_str_eq(o->id, id) && keel_str_eq(o->source, source) &&
		    keel_str_eq(o->tenant, tenant))
			return load_fail(L,
					 "event \"%.*s\" from \"%.*s\": duplicate (line "
					 "%llu)",
					 (int)id.len, id.ptr, (int)source.len, source.ptr,
					 (unsigned long long)o->position);
	}

	struct keel_arena *a = &L->arena;
	struct keel_batch_event *ev = keel_arena_alloc(a, sizeof *ev);
	memset(ev, 0, sizeof *ev);
	ev->tenant = keel_arena_str(a, tenant);
	ev->source = keel_arena_str(a, source);
	ev->id = keel_arena_str(a, id);
	ev->type = keel_arena_str(a, type);
	ev->time = time;
	ev->envelope = keel_arena_str(a, keel_str_make(L->tmp.data, L->tmp.len));
	ev->hash = keel_hash64(ev->envelope.ptr, ev->envelope.len, 0);
	ev->position = L->line;
	ev->status = KEEL_EV_PENDING;
	keel_ptrvec_push(&L->events, ev);
	keel_map_put(&L->event_ids, h, ev);
	return 0;
}

/* Writes the open batch in one transaction. */
static int load_flush(struct load_ctx *L)
{
	if (L->records == 0 && !L->ab.nrows && !L->ab.nmentions)
		return 0;
	struct keel_batch_event **ev = (struct keel_batch_event **)L->events.items;
	size_t n = L->events.len;
	int rc = keel_store_begin(L->s);
	if (rc == 0 && n)
		rc = keel_store_seen_ids(L->s, ev, n);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (ev[i]->status != KEEL_EV_PENDING) {
			L->line = ev[i]->position;
			rc = load_fail(L,
				       "event \"%.*s\" from \"%.*s\": duplicate (already "
				       "loaded)",
				       (int)ev[i]->id.len, ev[i]->id.ptr,
				       (int)ev[i]->source.len, ev[i]->source.ptr);
		}
		ev[i]->status = KEEL_EV_ACCEPTED;
	}
	if (rc == 0) {
		struct keel_append a = keel_append_view(&L->ab, ev, n);
		keel_append_stamp(&a, keel_store_recorded_at(L->s));
		rc = keel_store_append(L->s, &a);
	}
	if (rc == 0)
		rc = keel_store_commit(L->s);
	if (rc) {
		if (rc != KEEL_EDUMP) {
			/* Keep the store's message; add the batch's lines. */
			char *why = keel_xstrdup(keel_store_errmsg(L->s));
			keel_store_fail(L->s, rc, "lines %llu-%llu: %s",
					(unsigned long long)L->first_line,
					(unsigned long long)L->line, why);
			free(why);
		}
		keel_store_rollback(L->s);
		return rc;
	}
	keel_append_builder_reset(&L->ab);
	keel_arena_reset(&L->arena);
	L->events.len = 0;
	keel_map_clear(&L->event_ids);
	L->records = 0;
	return 0;
}

/* Validates one line and adds its record to the open batch. */
static int load_line(struct load_ctx *L, const char *text, size_t len)
{
	struct keel_json_error jerr;
	if (keel_json_parse(&L->doc, text, len, &jerr)) {
		/* A dump kept compressed: say so rather than "not valid JSON". */
		bool gzip = len >= 2 && memcmp(text, "\x1f\x8b", 2) == 0;
		bool zstd = len >= 4 && memcmp(text, "\x28\xb5\x2f\xfd", 4) == 0;
		if (L->line == 1 && (gzip || zstd))
			return load_fail(L, "%s data: load reads a plain dump (%s FILE | "
					    "keel load -)",
					 gzip ? "gzip" : "zstd", gzip ? "zcat" : "zstdcat");
		return load_fail(L, "not valid JSON at byte %zu: %s", jerr.offset + 1,
				 jerr.msg);
	}
	const struct keel_json *obj = L->doc.root;
	if (obj->type != KEEL_JSON_OBJECT)
		return load_fail(L, "expected a JSON object");
	struct keel_str type, tenant;
	int rc;
	/* Any string up to an event type's length, so that a line of another
	 * kind (an event given to load by mistake) hears which types there are. */
	if ((rc = field_str(L, obj, "type", 1, KEEL_TYPE_MAX, false, &type)) ||
	    (rc = field_str(L, obj, "tenant", 1, KEEL_TENANT_MAX, false, &tenant)))
		return rc;
	if (!tenant_name_ok(tenant))
		return load_fail(L, "field \"tenant\": must be 1-64 bytes of "
				    "[A-Za-z0-9._-]");
	bool row = keel_str_eq(type, keel_str_cstr("fact")) ||
		   keel_str_eq(type, keel_str_cstr("relation"));
	if (!row && (rc = load_run_flush(L)) != 0)
		return rc;
	if (keel_str_eq(type, keel_str_cstr("entity")))
		return load_entity(L, obj, tenant);
	if (keel_str_eq(type, keel_str_cstr("fact")))
		return load_row(L, obj, tenant, KEEL_ROW_FACT);
	if (keel_str_eq(type, keel_str_cstr("relation")))
		return load_row(L, obj, tenant, KEEL_ROW_RELATION);
	if (keel_str_eq(type, keel_str_cstr("event")))
		return load_event(L, obj, tenant);
	return load_fail(L, "field \"type\": must be entity, fact, relation or event");
}

int keel_load(struct keel_store *s, FILE *in)
{
	if (!s || !in)
		return KEEL_EINVAL;
	struct load_ctx L = {.s = s, .in = in};
	keel_json_doc_init(&L.doc);
	keel_json_doc_init(&L.edoc);
	keel_append_builder_init(&L.ab, true);
	keel_arena_init(&L.arena);
	keel_arena_init(&L.run_arena);
	keel_buf_init(&L.chain_source);
	keel_buf_init(&L.chain_id);
	keel_map_init(&L.event_ids);
	keel_map_init(&L.old_sources);
	keel_arena_init(&L.old_arena);
	keel_map_init(&L.entities);
	keel_buf_init(&L.tmp);
	keel_buf_init(&L.msg);
	keel_buf_init(&L.why);
	struct load_prev *p = &L.prev;
	keel_buf_init(&p->tenant);
	keel_buf_init(&p->subject);
	keel_buf_init(&p->name);
	keel_buf_init(&p->object);
	keel_buf_init(&p->asserted_source);
	keel_buf_init(&p->asserted_id);

	char *line = NULL;
	size_t cap = 0;
	ssize_t got;
	int rc = 0;
	while (rc == 0 && (got = getline(&line, &cap, in)) >= 0) {
		L.line++;
		size_t len = (size_t)got;
		if (len && line[len - 1] == '\n')
			len--;
		/* An editor's byte order mark opening the file is no part of
		 * the first record (ingest drops it too). */
		const char *text = line;
		if (L.line == 1 && len >= 3 && memcmp(line, "\xef\xbb\xbf", 3) == 0) {
			text += 3;
			len -= 3;
		}
		if (len == 0)
			continue; /* a blank line carries no record */
		if (L.records == 0)
			L.first_line = L.line;
		rc = load_line(&L, text, len);
		if (rc == 0 && ++L.records >= LOAD_BATCH)
			rc = load_flush(&L);
	}
	/* getline also stops on a line it cannot allocate (ENOMEM), without
	 * the stream's error flag: anything short of the end of the file is
	 * an error, never taken for the end of the dump. */
	if (rc == 0 && (ferror(in) || !feof(in)))
		rc = keel_store_fail(s, KEEL_EIO, "line %llu: cannot read: %s",
				     (unsigned long long)L.line + 1, strerror(errno));
	if (rc == 0 && p->have_row && p->row_to != KEEL_TIME_INF) {
		rc = load_fail(&L,
			       "the timeline of line %llu ends with a closed row "
			       "(its last non-empty row must be open)",
			       (unsigned long long)p->row_line);
	}
	if (rc == 0)
		rc = load_run_flush(&L);
	if (rc == 0)
		rc = load_flush(&L);

	free(line);
	keel_buf_free(&p->tenant);
	keel_buf_free(&p->subject);
	keel_buf_free(&p->name);
	keel_buf_free(&p->object);
	keel_buf_free(&p->asserted_source);
	keel_buf_free(&p->asserted_id);
	keel_buf_free(&L.tmp);
	keel_buf_free(&L.msg);
	keel_buf_free(&L.why);
	keel_map_free(&L.event_ids);
	keel_map_free(&L.entities);
	keel_append_builder_free(&L.ab);
	keel_arena_free(&L.arena);
	keel_arena_free(&L.run_arena);
	keel_buf_free(&L.chain_source);
	keel_buf_free(&L.chain_id);
	keel_map_free(&L.old_sources);
	keel_arena_free(&L.old_arena);
	free(L.run);
	keel_json_doc_free(&L.doc);
	keel_json_doc_free(&L.edoc);
	keel_ptrvec_free(&L.events);
	return rc;
}

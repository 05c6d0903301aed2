/*
 * find.c - finding things: keel tenants, keel entities and keel search as
 * JSON documents (docs/cli.md), a page at a time.
 *
 * A page is filled from candidates the store finds in one index range
 * (its entity_subjects and fact_subjects ops: subjects in bytewise order,
 * matched on rows as written), each confirmed by the ordinary read of that
 * subject: the entity folded from its mentions as known at known_at, or
 * the fact's row valid at `at` (the read show --at makes). Candidates come
 * a page's worth at a time and are confirmed after the store has handed
 * them all over, so no store is asked to read while a result is open. The
 * page ends at one subject more than it shows, so "next" is null exactly
 * on the last page.
 *
 * A cursor is the last subject shown, base64url-encoded (RFC 4648, no
 * padding): the next page starts after it, whatever was written since.
 */
#include "keel.h"
#include "event/json_write.h"

#include <stdlib.h>
#include <string.h>

#include "event/json.h"
#include "find.h"
#include "options.h"
#include "moment.h"
#include "store/store.h"
#include "util.h"

/* ---------------------------------------------------------------- cursors */

static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void cursor_encode(struct keel_buf *b, struct keel_str s)
{
	const unsigned char *p = (const unsigned char *)s.ptr;
	size_t i = 0;
	for (; i + 3 <= s.len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		for (int k = 18; k >= 0; k -= 6)
			keel_buf_addc(b, b64url[(v >> k) & 63]);
	}
	if (s.len - i == 1) {
		uint32_t v = (uint32_t)p[i] << 16;
		keel_buf_addc(b, b64url[(v >> 18) & 63]);
		keel_buf_addc(b, b64url[(v >> 12) & 63]);
	} else if (s.len - i == 2) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
		keel_buf_addc(b, b64url[(v >> 18) & 63]);
		keel_buf_addc(b, b64url[(v >> 12) & 63]);
		keel_buf_addc(b, b64url[(v >> 6) & 63]);
	}
}

void keel_find_next(struct keel_buf *b, const char *last, size_t len)
{
	keel_buf_adds(b, "\"next\":");
	if (!last) {
		keel_buf_adds(b, "null");
		return;
	}
	keel_buf_addc(b, '"');
	cursor_encode(b, keel_str_make(last, len));
	keel_buf_addc(b, '"');
}

static int b64url_digit(char c)
{
	const char *p = c ? strchr(b64url, c) : NULL;
	return p ? (int)(p - b64url) : -1;
}

/* The subject a cursor names; false when it is not one keel gives: not
 * base64url, a length no encoding has, bits set past the end, empty. */
static bool cursor_decode(const char *c, struct keel_buf *out)
{
	size_t n = strlen(c);
	if (n == 0 || n % 4 == 1)
		return false;
	uint32_t v = 0;
	size_t bits = 0;
	for (size_t i = 0; i < n; i++) {
		int d = b64url_digit(c[i]);
		if (d < 0)
			return false;
		v = (v << 6) | (uint32_t)d;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			keel_buf_addc(out, (char)((v >> bits) & 0xff));
		}
	}
	return (v & ((1u << bits) - 1)) == 0;
}

/* ------------------------------------------------------------ the pages */

/* What a finding read is after: its options taken with their defaults. */
struct find_page {
	struct keel_read_options o;
	size_t limit;
	struct keel_buf after; /* the cursor's subject */
	bool has_after;
	struct keel_buf doc;
	size_t shown;
	struct keel_buf last; /* the last subject shown */
	bool more;	      /* a subject past the page confirmed */
};

static void page_free(struct find_page *p)
{
	keel_buf_free(&p->after);
	keel_buf_free(&p->last);
}

static int page_take(struct keel_store *s, struct find_page *p,
		     const struct keel_find_options *given, struct keel_find_options *f,
		     const struct keel_read_options *o)
{
	memset(p, 0, sizeof *p);
	keel_buf_init(&p->after);
	keel_buf_init(&p->last);
	keel_buf_init(&p->doc);
	if (given) {
		const char *why = keel_options_copy(f, sizeof *f, given);
		if (why)
			return keel_store_fail(s, KEEL_EINVAL, "keel_find_options: %s", why);
	} else {
		memset(f, 0, sizeof *f);
		f->size = sizeof *f;
	}
	int rc = keel_read_options_take(s, o, &p->o);
	if (rc)
		return rc;
	if (f->limit > KEEL_MAX_PAGE)
		return keel_store_fail(s, KEEL_EINVAL, "limit %zu: more than %d", f->limit,
				       KEEL_MAX_PAGE);
	p->limit = f->limit ? f->limit : KEEL_DEFAULT_PAGE;
	if (f->cursor) {
		if (!cursor_decode(f->cursor, &p->after))
			return keel_store_fail(s, KEEL_EINVAL,
					       "cursor \"%.64s\": not a cursor keel gave "
					       "(pass the \"next\" of the page before)",
					       f->cursor);
		p->has_after = true;
	}
	return 0;
}

/* Whether the page takes one more subject: false once it is full, when
 * the subject only proves there is a next page. */
static bool page_room(struct find_page *p)
{
	if (p->shown < p->limit)
		return true;
	p->more = true;
	return false;
}

static void page_shown(struct find_page *p, struct keel_str subject)
{
	if (p->shown++)
		keel_buf_addc(&p->doc, ',');
	keel_buf_reset(&p->last);
	keel_buf_add(&p->last, subject.ptr, subject.len);
}

/* ],"next":CURSOR|null} */
static void page_end(struct find_page *p)
{
	keel_buf_adds(&p->doc, "],");
	keel_find_next(&p->doc, p->more ? p->last.data : NULL, p->last.len);
	keel_buf_addc(&p->doc, '}');
}

/* "tenant":..,"at":..[,"known_at":..] */
static void page_head(struct find_page *p, const char *tenant)
{
	keel_buf_adds(&p->doc, "{\"tenant\":");
	keel_buf_add_json_str(&p->doc, keel_str_cstr(tenant));
	keel_buf_adds(&p->doc, ",\"at\":");
	keel_buf_add_json_time(&p->doc, p->o.at);
	if (p->o.known_at_set) {
		keel_buf_adds(&p->doc, ",\"known_at\":");
		keel_buf_add_json_time(&p->doc, p->o.known_at);
	}
}

typedef int (*confirm_fn)(struct keel_store *s, struct find_page *p, const char *subject,
			  void *ud);

/* Fills the page: candidates a page's worth at a time from the store,
 * each confirmed (and written) by confirm, until one more than the page
 * holds is confirmed or the candidates run out. */
static int page_fill(struct keel_store *s, struct find_page *p, struct keel_candidates *q,
		     bool fact, confirm_fn confirm, void *ud)
{
	struct keel_buf after;
	keel_buf_init(&after);
	if (p->has_after)
		keel_buf_add(&after, p->after.data, p->after.len);
	bool has_after = p->has_after;
	int rc = 0;
	while (rc == 0 && !p->more) {
		struct keel_ptrvec cand = {0};
		q->after = has_after ? keel_str_make(after.data ? after.data : "", after.len)
				     : KEEL_STR_NULL;
		q->limit = p->limit + 1 - p->shown;
		rc = fact ? keel_store_fact_subjects(s, q, &cand)
			  : keel_store_entity_subjects(s, q, &cand);
		for (size_t i = 0; rc == 0 && !p->more && i < cand.len; i++)
			rc = confirm(s, p, cand.items[i], ud);
		bool last = cand.len < q->limit;
		if (cand.len) {
			keel_buf_reset(&after);
			keel_buf_adds(&after, cand.items[cand.len - 1]);
			has_after = true;
		}
		for (size_t i = 0; i < cand.len; i++)
			free(cand.items[i]);
		keel_ptrvec_free(&cand);
		if (last)
			break;
	}
	keel_buf_free(&after);
	return rc;
}

/* An empty page of a tenant the store does not know: not found, as every
 * other read answers it, rather than a page that looks like "none". */
static int page_tenant_known(struct keel_store *s, const struct find_page *p,
			     const char *tenant)
{
	return keel_store_tenant_known(s, keel_str_cstr(tenant),
				       p->o.known_at_set ? p->o.known_at : KEEL_TIME_INF);
}

static int page_finish(struct find_page *p, int rc, char **json)
{
	if (rc == 0)
		page_end(p);
	page_free(p);
	if (rc) {
		keel_buf_free(&p->doc);
		return rc;
	}
	*json = p->doc.data;
	return 0;
}

/* ----------------------------------------------------------------- tenants */

/* The tenants list, whole (p NULL) or a page of it. The store hands over
 * every tenant's name, sorted (one index scan: tens of thousands of
 * names are a few hundred kilobytes, read once a page); the page starts
 * after the cursor's name, so tenants added meanwhile never shift it. */
static int tenants_doc(struct keel_store *s, bool (*visible)(void *ud, const char *tenant),
		       void *ud, struct find_page *p, const struct keel_read_options *ro,
		       char **json)
{
	struct keel_read_options o;
	int rc = p ? 0 : keel_read_options_take(s, ro, &o);
	if (p)
		o = p->o;
	if (rc)
		return rc;
	if (o.at_set)
		return keel_store_fail(s, KEEL_EINVAL,
				       "the tenants list takes no valid time (--at): a "
				       "tenant exists from its first recording");
	struct keel_ptrvec names = {0};
	rc = keel_store_tenants_known(s, o.known_at_set ? o.known_at : KEEL_TIME_INF, &names);
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_addc(&b, '{');
	if (o.known_at_set) {
		keel_buf_adds(&b, "\"known_at\":");
		keel_buf_add_json_time(&b, o.known_at);
		keel_buf_addc(&b, ',');
	}
	keel_buf_adds(&b, "\"tenants\":[");
	size_t n = 0;
	bool more = false;
	const char *last = NULL;
	for (size_t i = 0; i < names.len; i++) {
		const char *name = names.items[i];
		if (rc || more || (visible && !visible(ud, name)))
			continue;
		size_t len = strlen(name);
		if (p && p->has_after &&
		    keel_str_cmp(keel_str_make(name, len),
				 keel_str_make(p->after.data ? p->after.data : "",
					       p->after.len)) <= 0)
			continue;
		if (p && n == p->limit) {
			more = true; /* one past the page: there is a next one */
			continue;
		}
		if (n++)
			keel_buf_addc(&b, ',');
		keel_buf_add_json_str(&b, keel_str_make(name, len));
		last = name;
	}
	keel_buf_addc(&b, ']');
	if (p) {
		keel_buf_addc(&b, ',');
		keel_find_next(&b, more ? last : NULL, more ? strlen(last) : 0);
	}
	keel_buf_addc(&b, '}');
	for (size_t i = 0; i < names.len; i++)
		free(names.items[i]);
	keel_ptrvec_free(&names);
	if (rc) {
		keel_buf_free(&b);
		return rc;
	}
	*json = b.data;
	return 0;
}

int keel_tenants(struct keel_store *s, bool (*visible)(void *ud, const char *tenant),
		 void *ud, const struct keel_read_options *ro, char **json)
{
	if (!s || !json)
		return KEEL_EINVAL;
	return tenants_doc(s, visible, ud, NULL, ro, json);
}

int keel_tenants_page(struct keel_store *s, bool (*visible)(void *ud, const char *tenant),
		      void *ud, const struct keel_find_options *given,
		      const struct keel_read_options *o, char **json)
{
	if (!s || !json)
		return KEEL_EINVAL;
	struct find_page p;
	struct keel_find_options f;
	int rc = page_take(s, &p, given, &f, o);
	if (rc == 0 && (f.kind || f.prefix))
		rc = keel_store_fail(s, KEEL_EINVAL,
				     "the tenants list takes no %s: only a limit and a cursor",
				     f.kind ? "kind" : "prefix");
	if (rc == 0)
		rc = tenants_doc(s, visible, ud, &p, NULL, json);
	page_free(&p);
	keel_buf_free(&p.doc);
	return rc;
}

/* ---------------------------------------------------------------- entities */

/* What a candidate is confirmed against. */
struct find_want {
	const char *tenant;
	struct keel_str kind;	   /* entities: absent = any */
	const char *predicate;	   /* search */
	struct keel_str value;	   /* search: compact JSON */
	int64_t at;		   /* search: the time its rows are read at */
	/* what the confirming read found, copied out of its scan */
	bool found;
	bool has_kind;
	struct keel_buf kind_seen;
	int64_t first_seen, last_seen;
	int64_t valid_from, valid_to;
	struct keel_buf asserted_source, asserted_id; /* the row's event */
};

static void want_init(struct find_want *w)
{
	memset(w, 0, sizeof *w);
	keel_buf_init(&w->kind_seen);
	keel_buf_init(&w->asserted_source);
	keel_buf_init(&w->asserted_id);
}

static void want_free(struct find_want *w)
{
	keel_buf_free(&w->kind_seen);
	keel_buf_free(&w->asserted_source);
	keel_buf_free(&w->asserted_id);
}

static int entity_seen_cb(void *ud, const struct keel_record *r)
{
	struct find_want *w = ud;
	w->found = true;
	w->first_seen = r->first_seen;
	w->last_seen = r->last_seen;
	w->has_kind = r->kind.ptr != NULL;
	keel_buf_reset(&w->kind_seen);
	if (r->kind.ptr)
		keel_buf_add(&w->kind_seen, r->kind.ptr, r->kind.len);
	return 0;
}

/* The entity as known at known_at: it counts when it was first seen at or
 * before `at` (as show --at has it exist) and, with a kind asked for,
 * when its kind is that one. */
static int confirm_entity(struct keel_store *s, struct find_page *p, const char *subject,
			  void *ud)
{
	struct find_want *w = ud;
	struct keel_scan sc = {.type = KEEL_REC_ENTITY,
			       .tenant = keel_str_cstr(w->tenant),
			       .subject = keel_str_cstr(subject)};
	keel_scan_known_at(&sc, &p->o);
	w->found = false;
	int rc = keel_store_scan(s, &sc, entity_seen_cb, w);
	if (rc || !w->found || w->first_seen > p->o.at)
		return rc;
	struct keel_str kind = w->has_kind ? keel_str_make(w->kind_seen.data ? w->kind_seen.data : "",
							   w->kind_seen.len)
					   : KEEL_STR_NULL;
	if (w->kind.ptr && (!kind.ptr || !keel_str_eq(kind, w->kind)))
		return 0;
	if (!page_room(p))
		return 0;
	page_shown(p, keel_str_cstr(subject));
	struct keel_buf *b = &p->doc;
	keel_buf_adds(b, "{\"subject\":");
	keel_buf_add_json_str(b, keel_str_cstr(subject));
	keel_buf_adds(b, ",\"kind\":");
	keel_buf_add_json_str(b, kind);
	keel_buf_adds(b, ",\"first_seen\":");
	keel_buf_add_json_time(b, w->first_seen);
	keel_buf_adds(b, ",\"last_seen\":");
	keel_buf_add_json_time(b, w->last_seen);
	keel_buf_addc(b, '}');
	return 0;
}

int keel_entities(struct keel_store *s, const char *tenant,
		  const struct keel_find_options *given, const struct keel_read_options *o,
		  char **json)
{
	if (!s || !json)
		return KEEL_EINVAL;
	if (!tenant)
		return keel_store_fail(s, KEEL_EINVAL, "entities: missing argument");
	struct keel_find_options f;
	struct find_page p;
	int rc = page_take(s, &p, given, &f, o);
	if (rc == 0) {
		page_head(&p, tenant);
		keel_buf_adds(&p.doc, ",\"kind\":");
		keel_buf_add_json_str(&p.doc, f.kind ? keel_str_cstr(f.kind) : KEEL_STR_NULL);
		keel_buf_adds(&p.doc, ",\"prefix\":");
		keel_buf_add_json_str(&p.doc,
				      f.prefix ? keel_str_cstr(f.prefix) : KEEL_STR_NULL);
		keel_buf_addf(&p.doc, ",\"limit\":%zu,\"entities\":[", p.limit);
		struct find_want w;
		want_init(&w);
		w.tenant = tenant;
		w.kind = f.kind ? keel_str_cstr(f.kind) : KEEL_STR_NULL;
		struct keel_candidates q = {.tenant = keel_str_cstr(tenant),
					    .kind = w.kind,
					    .prefix = f.prefix ? keel_str_cstr(f.prefix)
							       : KEEL_STR_NULL};
		rc = page_fill(s, &p, &q, false, confirm_entity, &w);
		want_free(&w);
		if (rc == 0 && p.shown == 0)
			rc = page_tenant_known(s, &p, tenant);
	}
	return page_finish(&p, rc, json);
}

/* ------------------------------------------------------------------ search */

/* The value a person typed as the JSON text facts are stored in: JSON
 * that parses, compacted; anything else the string it spells. */
static void search_value(const char *typed, struct keel_buf *out)
{
	struct keel_json_doc doc;
	struct keel_json_error err;
	keel_json_doc_init(&doc);
	if (keel_json_parse(&doc, typed, strlen(typed), &err) == 0)
		keel_json_compact(&doc, doc.root, out);
	else
		keel_buf_add_json_str(out, keel_str_cstr(typed));
	keel_json_doc_free(&doc);
}

static int fact_at_cb(void *ud, const struct keel_record *r)
{
	struct find_want *w = ud;
	/* The row holding at `at` (the scan also gives the one after it). */
	if (!(r->valid_from <= w->at && w->at < r->valid_to))
		return 0;
	if (r->value.ptr && keel_str_eq(r->value, w->value)) {
		w->found = true;
		w->valid_from = r->valid_from;
		w->valid_to = r->valid_to;
		keel_buf_reset(&w->asserted_source);
		keel_buf_addstr(&w->asserted_source, r->asserted_by.source);
		keel_buf_reset(&w->asserted_id);
		keel_buf_addstr(&w->asserted_id, r->asserted_by.id);
	}
	return 1; /* at most one row holds at a time */
}

/* The fact's row valid at `at`, as known at known_at, holds the value. */
static int confirm_fact(struct keel_store *s, struct find_page *p, const char *subject,
			void *ud)
{
	struct find_want *w = ud;
	struct keel_scan sc = {.type = KEEL_REC_FACT,
			       .tenant = keel_str_cstr(w->tenant),
			       .subject = keel_str_cstr(subject),
			       .name = keel_str_cstr(w->predicate),
			       .at_set = true,
			       .at = p->o.at};
	keel_scan_known_at(&sc, &p->o);
	w->found = false;
	w->at = p->o.at;
	int rc = keel_store_scan(s, &sc, fact_at_cb, w);
	if (rc == 1)
		rc = 0;
	if (rc || !w->found || !page_room(p))
		return rc;
	page_shown(p, keel_str_cstr(subject));
	struct keel_buf *b = &p->doc;
	keel_buf_adds(b, "{\"subject\":");
	keel_buf_add_json_str(b, keel_str_cstr(subject));
	keel_buf_adds(b, ",\"valid_from\":");
	keel_buf_add_json_time(b, w->valid_from);
	keel_buf_adds(b, ",\"valid_to\":");
	keel_buf_add_json_time(b, w->valid_to);
	keel_buf_adds(b, ",\"asserted_by\":");
	keel_buf_add_json_ref(
	    b, (struct keel_event_ref){
		   keel_str_make(w->asserted_source.data ? w->asserted_source.data : "",
				 w->asserted_source.len),
		   keel_str_make(w->asserted_id.data ? w->asserted_id.data : "",
				 w->asserted_id.len)});
	keel_buf_addc(b, '}');
	return 0;
}

int keel_search(struct keel_store *s, const char *tenant, const char *predicate,
		const char *value, const struct keel_find_options *given,
		const struct keel_read_options *o, char **json)
{
	if (!s || !json)
		return KEEL_EINVAL;
	if (!tenant || !predicate || !value)
		return keel_store_fail(s, KEEL_EINVAL, "search: missing argument");
	struct keel_find_options f;
	struct find_page p;
	int rc = page_take(s, &p, given, &f, o);
	struct keel_buf v;
	keel_buf_init(&v);
	search_value(value, &v);
	if (rc == 0) {
		struct keel_str vs = keel_str_make(v.data, v.len);
		page_head(&p, tenant);
		keel_buf_adds(&p.doc, ",\"predicate\":");
		keel_buf_add_json_str(&p.doc, keel_str_cstr(predicate));
		keel_buf_adds(&p.doc, ",\"value\":");
		keel_buf_add_json_raw(&p.doc, vs);
		keel_buf_addf(&p.doc, ",\"limit\":%zu,\"subjects\":[", p.limit);
		struct find_want w;
		want_init(&w);
		w.tenant = tenant;
		w.predicate = predicate;
		w.value = vs;
		struct keel_candidates q = {.tenant = keel_str_cstr(tenant),
					    .predicate = keel_str_cstr(predicate),
					    .value = vs,
					    .at = p.o.at,
					    .known_at_set = p.o.known_at_set,
					    .known_at = p.o.known_at};
		rc = page_fill(s, &p, &q, true, confirm_fact, &w);
		want_free(&w);
		if (rc == 0 && p.shown == 0)
			rc = page_tenant_known(s, &p, tenant);
	}
	keel_buf_free(&v);
	return page_finish(&p, rc, json);
}

/*
 * export.c - keel export: snapshots of the graph for other tools
 * (docs/export.md).
 *
 * Everything is read through the store's scan interface, tenant by tenant
 * in bytewise order and, inside a tenant, in canonical dump order, so two
 * stores holding the same data export the same bytes. Three writers:
 *
 *   csv      entities.csv, facts.csv, relations.csv, events.csv: a header
 *            row, RFC 4180 quoting (a field with a comma, quote, CR or LF
 *            is quoted, quotes doubled), CRLF line ends; an empty field
 *            is null.
 *   ndjson   one JSON object a line, written by the dump's line writer.
 *   graphml  one file per tenant (TENANT.graphml): entities are nodes with
 *            their kind and the facts valid at the snapshot time as data,
 *            linked relations valid then are directed edges.
 *
 * --at T keeps the rows valid at T (valid_from <= T < valid_to), the
 * entities first seen by T and the events up to T. Without it csv and
 * ndjson hold every row (the whole history) and graphml the current state
 * (the open rows).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "keel.h"
#include "dump.h"
#include "options.h"
#include "event/json.h"
#include "store/store.h"
#include "event/utf8.h"
#include "util.h"

struct export_out {
	struct keel_store *s;
	FILE *f;
	const char *path; /* for messages; NULL: the caller's stream */
	struct keel_buf buf;
};

static int export_flush(struct export_out *o)
{
	if (o->buf.len && fwrite(o->buf.data, 1, o->buf.len, o->f) != o->buf.len)
		return keel_store_fail(o->s, KEEL_EIO, "cannot write \"%s\": %s",
				       o->path ? o->path : "the export", strerror(errno));
	keel_buf_reset(&o->buf);
	return 0;
}

static int export_maybe_flush(struct export_out *o)
{
	return o->buf.len >= KEEL_OUTPUT_CHUNK ? export_flush(o) : 0;
}

static int export_open(struct keel_store *s, const struct keel_export_options *opt,
		       const char *name, struct export_out *o, struct keel_buf *path)
{
	memset(o, 0, sizeof *o);
	o->s = s;
	keel_buf_init(&o->buf);
	if (!opt->dir) {
		o->f = opt->out ? opt->out : stdout;
		return 0;
	}
	keel_buf_reset(path);
	keel_buf_addf(path, "%s/%s", opt->dir, name);
	o->path = path->data;
	o->f = fopen(path->data, "w");
	if (!o->f)
		return keel_store_fail(s, KEEL_EIO, "cannot create \"%s\": %s",
				       path->data, strerror(errno));
	return 0;
}

static int export_close(struct export_out *o, int rc)
{
	if (rc == 0)
		rc = export_flush(o);
	if (o->path) {
		if (fclose(o->f) != 0 && rc == 0)
			rc = keel_store_fail(o->s, KEEL_EIO, "cannot write \"%s\": %s",
					     o->path, strerror(errno));
	} else if (rc == 0 && fflush(o->f) != 0) {
		rc = keel_store_fail(o->s, KEEL_EIO, "cannot write the export: %s",
				     strerror(errno));
	}
	keel_buf_free(&o->buf);
	return rc;
}

/* A time as csv and GraphML write it: the canonical form unquoted, and
 * nothing for an open end (null). */
static void export_time(struct keel_buf *b, int64_t t)
{
	char tb[KEEL_TIME_BUFSZ];
	if (t != KEEL_TIME_INF)
		keel_buf_add(b, tb, keel_time_format(t, tb));
}

/* Which records a snapshot keeps. */
static bool export_keep(const struct keel_export_options *opt,
			const struct keel_record *r)
{
	if (!opt->at_set)
		return true;
	switch (r->type) {
	case KEEL_REC_ENTITY:
		return r->first_seen <= opt->at;
	case KEEL_REC_EVENT:
		return r->time <= opt->at;
	default:
		return true; /* the scan filtered by at already */
	}
}

/* Scans one record type of every tenant the options name. */
static int export_scan(struct keel_store *s, const struct keel_export_options *opt,
		       const char *const *tenants, size_t ntenants,
		       enum keel_record_type type, keel_scan_fn fn, void *ud)
{
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < ntenants; i++) {
		struct keel_scan q = {.type = type,
				      .tenant = keel_str_cstr(tenants[i]),
				      .known_at_set = opt->known_at_set,
				      .known_at = opt->known_at};
		if (opt->at_set && (type == KEEL_REC_FACT || type == KEEL_REC_RELATION)) {
			q.at_set = true;
			q.at = opt->at;
		}
		rc = keel_store_scan(s, &q, fn, ud);
	}
	return rc;
}

/* ------------------------------------------------------------------- csv */

/* RFC 4180: quoted only when needed; NULL (absent) is an empty field. */
static void csv_field(struct keel_buf *b, struct keel_str s)
{
	if (!s.ptr)
		return;
	bool quote = false;
	for (size_t i = 0; i < s.len && !quote; i++)
		quote = s.ptr[i] == ',' || s.ptr[i] == '"' || s.ptr[i] == '\r' ||
			s.ptr[i] == '\n';
	if (!quote && s.len) {
		keel_buf_add(b, s.ptr, s.len);
		return;
	}
	keel_buf_addc(b, '"');
	for (size_t i = 0; i < s.len; i++) {
		if (s.ptr[i] == '"')
			keel_buf_addc(b, '"');
		keel_buf_addc(b, s.ptr[i]);
	}
	keel_buf_addc(b, '"');
}

struct csv_ctx {
	const struct keel_export_options *opt;
	struct export_out out;
};

static int csv_record(void *ud, const struct keel_record *r)
{
	struct csv_ctx *c = ud;
	if (!export_keep(c->opt, r))
		return 0;
	struct keel_buf *b = &c->out.buf;
	csv_field(b, r->tenant);
	keel_buf_addc(b, ',');
	switch (r->type) {
	case KEEL_REC_ENTITY:
		csv_field(b, r->subject);
		keel_buf_addc(b, ',');
		csv_field(b, r->kind);
		keel_buf_addc(b, ',');
		export_time(b, r->first_seen);
		keel_buf_addc(b, ',');
		export_time(b, r->last_seen);
		break;
	case KEEL_REC_FACT:
	case KEEL_REC_RELATION:
		csv_field(b, r->subject);
		keel_buf_addc(b, ',');
		csv_field(b, r->name);
		keel_buf_addc(b, ',');
		if (r->type == KEEL_REC_FACT) {
			csv_field(b, r->value);
		} else {
			csv_field(b, r->object);
			keel_buf_adds(b, r->linked ? ",true" : ",false");
		}
		keel_buf_addc(b, ',');
		export_time(b, r->valid_from);
		keel_buf_addc(b, ',');
		export_time(b, r->valid_to);
		keel_buf_addc(b, ',');
		csv_field(b, r->asserted_by.source);
		keel_buf_addc(b, ',');
		csv_field(b, r->asserted_by.id);
		keel_buf_addc(b, ',');
		csv_field(b, r->closed_by.source);
		keel_buf_addc(b, ',');
		csv_field(b, r->closed_by.id);
		break;
	case KEEL_REC_EVENT:
		csv_field(b, r->source);
		keel_buf_addc(b, ',');
		csv_field(b, r->id);
		keel_buf_addc(b, ',');
		csv_field(b, r->event_type);
		keel_buf_addc(b, ',');
		export_time(b, r->time);
		keel_buf_addc(b, ',');
		csv_field(b, r->envelope);
		break;
	}
	keel_buf_add(b, "\r\n", 2);
	return export_maybe_flush(&c->out);
}

static int export_csv(struct keel_store *s, const struct keel_export_options *opt,
		      const struct keel_ptrvec *tenants)
{
	static const struct {
		const char *file, *header;
		enum keel_record_type type;
	} tables[] = {
	    {"entities.csv", "tenant,subject,kind,first_seen,last_seen", KEEL_REC_ENTITY},
	    {"facts.csv",
	     "tenant,subject,predicate,value,valid_from,valid_to,asserted_by_source,"
	     "asserted_by_id,closed_by_source,closed_by_id",
	     KEEL_REC_FACT},
	    {"relations.csv",
	     "tenant,subject,relation,object,linked,valid_from,valid_to,"
	     "asserted_by_source,asserted_by_id,closed_by_source,closed_by_id",
	     KEEL_REC_RELATION},
	    {"events.csv", "tenant,source,id,event_type,time,envelope", KEEL_REC_EVENT},
	};
	if (!opt->dir)
		return keel_store_fail(
		    s, KEEL_EINVAL,
		    "csv writes one file per table: it needs an output directory");
	struct keel_buf path;
	keel_buf_init(&path);
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < KEEL_ARRAY_LEN(tables); i++) {
		struct csv_ctx c = {.opt = opt};
		rc = export_open(s, opt, tables[i].file, &c.out, &path);
		if (rc)
			break;
		keel_buf_adds(&c.out.buf, tables[i].header);
		keel_buf_add(&c.out.buf, "\r\n", 2);
		rc = export_scan(s, opt, (const char *const *)tenants->items,
				 tenants->len, tables[i].type, csv_record, &c);
		rc = export_close(&c.out, rc);
	}
	keel_buf_free(&path);
	return rc;
}

/* ---------------------------------------------------------------- ndjson */

struct ndjson_ctx {
	const struct keel_export_options *opt;
	struct export_out *out;
};

/* The dump's own line writer (dump.h): the export keeps a snapshot's
 * records and writes each exactly as the dump would. */
static int ndjson_record(void *ud, const struct keel_record *r)
{
	struct ndjson_ctx *c = ud;
	if (!export_keep(c->opt, r))
		return 0;
	keel_dump_line(&c->out->buf, r);
	return export_maybe_flush(c->out);
}

static int export_ndjson(struct keel_store *s, const struct keel_export_options *opt,
			 const struct keel_ptrvec *tenants)
{
	struct keel_buf path;
	keel_buf_init(&path);
	struct export_out out;
	int rc = export_open(s, opt, "export.ndjson", &out, &path);
	if (rc == 0) {
		static const enum keel_record_type order[] = {
		    KEEL_REC_ENTITY, KEEL_REC_FACT, KEEL_REC_RELATION, KEEL_REC_EVENT};
		struct ndjson_ctx c = {opt, &out};
		/* Tenant by tenant, as the dump: every type of one tenant first. */
		for (size_t t = 0; rc == 0 && t < tenants->len; t++) {
			const char *const *one = (const char *const *)&tenants->items[t];
			for (size_t i = 0; rc == 0 && i < KEEL_ARRAY_LEN(order); i++)
				rc = export_scan(s, opt, one, 1, order[i], ndjson_record,
						 &c);
		}
		rc = export_close(&out, rc);
	}
	keel_buf_free(&path);
	return rc;
}

/* --------------------------------------------------------------- graphml */

/* Length of the UTF-8 character at p (n bytes left), its code point in
 * *cp; 0 if the bytes there are not UTF-8. */
static size_t utf8_char(const unsigned char *p, size_t n, uint32_t *cp)
{
	size_t k = keel_utf8_len(p, p + n);
	if (k)
		*cp = keel_utf8_decode(p, k);
	return k;
}

/* XML 1.0's Char: tab, LF, CR, U+0020-U+D7FF, U+E000-U+FFFD and U+10000
 * up. Not the rest of C0, and not U+FFFE and U+FFFF, which are valid
 * UTF-8 (and so may be in a subject or value). */
static bool xml_char(uint32_t cp)
{
	if (cp < 0x20)
		return cp == '\t' || cp == '\n' || cp == '\r';
	return cp != 0xfffe && cp != 0xffff;
}

/* Whether XML 1.0 can carry s exactly: valid UTF-8 of XML characters. */
static bool xml_representable(struct keel_str s)
{
	const unsigned char *p = (const unsigned char *)s.ptr;
	uint32_t cp;
	for (size_t i = 0, k; i < s.len; i += k)
		if (!(k = utf8_char(p + i, s.len - i, &cp)) || !xml_char(cp))
			return false;
	return true;
}

/* Text or attribute content; what XML cannot carry becomes U+FFFD (the
 * exact bytes are in the csv and ndjson exports). */
static void xml_text(struct keel_buf *b, struct keel_str s)
{
	if (!xml_representable(s)) {
		/* Character by character: each one XML cannot carry, and
		 * each byte that is not UTF-8, becomes one U+FFFD; the rest
		 * is kept. */
		const unsigned char *p = (const unsigned char *)s.ptr;
		uint32_t cp;
		for (size_t i = 0; i < s.len;) {
			size_t k = utf8_char(p + i, s.len - i, &cp);
			if (k && xml_char(cp))
				xml_text(b, keel_str_make(s.ptr + i, k));
			else
				keel_buf_adds(b, "\xef\xbf\xbd");
			i += k ? k : 1;
		}
		return;
	}
	for (size_t i = 0; i < s.len; i++) {
		char c = s.ptr[i];
		switch (c) {
		case '&':
			keel_buf_adds(b, "&amp;");
			break;
		case '<':
			keel_buf_adds(b, "&lt;");
			break;
		case '>':
			keel_buf_adds(b, "&gt;");
			break;
		case '"':
			keel_buf_adds(b, "&quot;");
			break;
		case '\'':
			keel_buf_adds(b, "&apos;");
			break;
		case '\t':
		case '\n':
		case '\r':
			/* Kept exactly even inside attributes. */
			keel_buf_addf(b, "&#%u;", (unsigned)c);
			break;
		default:
			keel_buf_addc(b, c);
		}
	}
}

struct gml_fact {
	char *subject, *predicate, *value; /* value: display text */
	size_t subject_len;
};

struct gml_ctx {
	const struct keel_export_options *opt;
	struct keel_ptrvec entities; /* struct keel_record copies: subject, kind, times */
	struct keel_ptrvec facts;    /* struct gml_fact, by subject then predicate */
	struct keel_ptrvec predicates; /* distinct, sorted at the end */
	struct keel_map pred_map;
	struct keel_buf edges;
	uint64_t nedges;
	struct keel_map node_ids; /* subject -> node index, for edges */
	struct keel_json_doc doc;
	struct keel_buf tmp;
};

struct gml_entity {
	char *subject, *kind;
	size_t subject_len;
	int64_t first_seen, last_seen;
	size_t index;
};

static int gml_entity_rec(void *ud, const struct keel_record *r)
{
	struct gml_ctx *c = ud;
	if (!export_keep(c->opt, r))
		return 0;
	struct gml_entity *e = keel_xcalloc(1, sizeof *e);
	e->subject = keel_xstrndup(r->subject.ptr, r->subject.len);
	e->subject_len = r->subject.len;
	e->kind = r->kind.ptr ? keel_xstrndup(r->kind.ptr, r->kind.len) : NULL;
	e->first_seen = r->first_seen;
	e->last_seen = r->last_seen;
	e->index = c->entities.len;
	keel_ptrvec_push(&c->entities, e);
	keel_map_put(&c->node_ids, keel_hash64(r->subject.ptr, r->subject.len, 3), e);
	return 0;
}

static const struct gml_entity *gml_find(struct gml_ctx *c, struct keel_str subject)
{
	uint64_t h = keel_hash64(subject.ptr, subject.len, 3);
	for (size_t i = keel_map_first(&c->node_ids, h); i != SIZE_MAX;
	     i = keel_map_next(&c->node_ids, h, i)) {
		const struct gml_entity *e = c->node_ids.values[i];
		if (keel_str_eq(keel_str_make(e->subject, e->subject_len), subject))
			return e;
	}
	return NULL;
}

/* A node's id: its subject when XML carries it exactly, else n<index>. */
static void gml_node_id(struct keel_buf *b, const struct gml_entity *e)
{
	struct keel_str s = keel_str_make(e->subject, e->subject_len);
	if (xml_representable(s))
		xml_text(b, s);
	else
		keel_buf_addf(b, "n%zu", e->index);
}

/* Without --at only open rows: the current state. */
static bool gml_current(const struct gml_ctx *c, const struct keel_record *r)
{
	return c->opt->at_set || r->valid_to == KEEL_TIME_INF;
}

static int gml_fact_rec(void *ud, const struct keel_record *r)
{
	struct gml_ctx *c = ud;
	if (!gml_current(c, r) || !r->value.ptr)
		return 0;
	/* Strings as their text, every other value as its JSON. */
	struct keel_json_error jerr;
	struct keel_str shown = r->value;
	if (r->value.len && r->value.ptr[0] == '"' &&
	    keel_json_parse(&c->doc, r->value.ptr, r->value.len, &jerr) == 0 &&
	    c->doc.root->type == KEEL_JSON_STRING)
		shown = keel_str_make(c->doc.root->str, c->doc.root->len);
	struct gml_fact *f = keel_xcalloc(1, sizeof *f);
	f->subject = keel_xstrndup(r->subject.ptr, r->subject.len);
	f->subject_len = r->subject.len;
	f->predicate = keel_xstrndup(r->name.ptr, r->name.len);
	keel_buf_reset(&c->tmp);
	xml_text(&c->tmp, shown);
	f->value = keel_xstrdup(c->tmp.data ? c->tmp.data : "");
	keel_ptrvec_push(&c->facts, f);
	uint64_t h = keel_hash64(r->name.ptr, r->name.len, 4);
	for (size_t i = keel_map_first(&c->pred_map, h); i != SIZE_MAX;
	     i = keel_map_next(&c->pred_map, h, i))
		if (keel_str_eq(keel_str_cstr(c->pred_map.values[i]), r->name))
			return 0;
	char *p = keel_xstrndup(r->name.ptr, r->name.len);
	keel_map_put(&c->pred_map, h, p);
	keel_ptrvec_push(&c->predicates, p);
	return 0;
}

static int gml_relation_rec(void *ud, const struct keel_record *r)
{
	struct gml_ctx *c = ud;
	if (!gml_current(c, r) || !r->linked)
		return 0;
	const struct gml_entity *from = gml_find(c, r->subject),
				*to = gml_find(c, r->object);
	if (!from || !to)
		return 0; /* cannot happen: a link upserts both entities */
	struct keel_buf *b = &c->edges;
	keel_buf_addf(b, "    <edge id=\"e%llu\" source=\"",
		      (unsigned long long)c->nedges++);
	gml_node_id(b, from);
	keel_buf_adds(b, "\" target=\"");
	gml_node_id(b, to);
	keel_buf_adds(b, "\"><data key=\"relation\">");
	xml_text(b, r->name);
	keel_buf_adds(b, "</data><data key=\"valid_from\">");
	export_time(b, r->valid_from);
	keel_buf_adds(b, "</data><data key=\"asserted_by_source\">");
	xml_text(b, r->asserted_by.source);
	keel_buf_adds(b, "</data><data key=\"asserted_by_id\">");
	xml_text(b, r->asserted_by.id);
	keel_buf_adds(b, "</data></edge>\n");
	return 0;
}

static int gml_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t gml_pred_index(const struct gml_ctx *c, const char *p)
{
	size_t lo = 0, hi = c->predicates.len;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int k = strcmp(c->predicates.items[mid], p);
		if (!k)
			return mid;
		if (k < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void gml_free(struct gml_ctx *c)
{
	for (size_t i = 0; i < c->entities.len; i++) {
		struct gml_entity *e = c->entities.items[i];
		free(e->subject);
		free(e->kind);
		free(e);
	}
	for (size_t i = 0; i < c->facts.len; i++) {
		struct gml_fact *f = c->facts.items[i];
		free(f->subject);
		free(f->predicate);
		free(f->value);
		free(f);
	}
	for (size_t i = 0; i < c->predicates.len; i++)
		free(c->predicates.items[i]);
	keel_ptrvec_free(&c->entities);
	keel_ptrvec_free(&c->facts);
	keel_ptrvec_free(&c->predicates);
	keel_map_free(&c->pred_map);
	keel_map_free(&c->node_ids);
	keel_buf_free(&c->edges);
	keel_buf_free(&c->tmp);
	keel_json_doc_free(&c->doc);
}

static int export_graphml_tenant(struct keel_store *s,
				 const struct keel_export_options *opt,
				 const char *tenant, struct keel_buf *path)
{
	struct gml_ctx c;
	memset(&c, 0, sizeof c);
	c.opt = opt;
	keel_map_init(&c.pred_map);
	keel_map_init(&c.node_ids);
	keel_buf_init(&c.edges);
	keel_buf_init(&c.tmp);
	keel_json_doc_init(&c.doc);
	int rc = export_scan(s, opt, &tenant, 1, KEEL_REC_ENTITY, gml_entity_rec, &c);
	if (rc == 0)
		rc = export_scan(s, opt, &tenant, 1, KEEL_REC_FACT, gml_fact_rec, &c);
	if (rc == 0)
		rc = export_scan(s, opt, &tenant, 1, KEEL_REC_RELATION, gml_relation_rec,
				 &c);
	if (rc) {
		gml_free(&c);
		return rc;
	}
	if (c.predicates.len > 1)
		qsort(c.predicates.items, c.predicates.len, sizeof(void *), gml_cmp_str);

	struct keel_buf name;
	keel_buf_init(&name);
	keel_buf_addf(&name, "%s.graphml", tenant);
	struct export_out out;
	rc = export_open(s, opt, name.data, &out, path);
	keel_buf_free(&name);
	if (rc) {
		gml_free(&c);
		return rc;
	}
	struct keel_buf *b = &out.buf;
	keel_buf_adds(
	    b,
	    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\" "
	    "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
	    "xsi:schemaLocation=\"http://graphml.graphdrawing.org/xmlns "
	    "http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd\">\n"
	    "  <key id=\"subject\" for=\"node\" attr.name=\"subject\" "
	    "attr.type=\"string\"/>\n"
	    "  <key id=\"kind\" for=\"node\" attr.name=\"kind\" attr.type=\"string\"/>\n"
	    "  <key id=\"first_seen\" for=\"node\" attr.name=\"first_seen\" "
	    "attr.type=\"string\"/>\n"
	    "  <key id=\"last_seen\" for=\"node\" attr.name=\"last_seen\" "
	    "attr.type=\"string\"/>\n");
	for (size_t i = 0; i < c.predicates.len; i++) {
		keel_buf_addf(b, "  <key id=\"f%zu\" for=\"node\" attr.name=\"", i);
		xml_text(b, keel_str_cstr(c.predicates.items[i]));
		keel_buf_adds(b, "\" attr.type=\"string\"/>\n");
	}
	keel_buf_adds(b,
		      "  <key id=\"relation\" for=\"edge\" attr.name=\"relation\" "
		      "attr.type=\"string\"/>\n"
		      "  <key id=\"valid_from\" for=\"edge\" attr.name=\"valid_from\" "
		      "attr.type=\"string\"/>\n"
		      "  <key id=\"asserted_by_source\" for=\"edge\" "
		      "attr.name=\"asserted_by_source\" attr.type=\"string\"/>\n"
		      "  <key id=\"asserted_by_id\" for=\"edge\" "
		      "attr.name=\"asserted_by_id\" attr.type=\"string\"/>\n"
		      "  <graph id=\"");
	xml_text(b, keel_str_cstr(tenant));
	keel_buf_adds(b, "\" edgedefault=\"directed\">\n");
	/* Entities and facts both come sorted by subject: one merge. */
	size_t fi = 0;
	for (size_t i = 0; rc == 0 && i < c.entities.len; i++) {
		const struct gml_entity *e = c.entities.items[i];
		struct keel_str subj = keel_str_make(e->subject, e->subject_len);
		keel_buf_adds(b, "    <node id=\"");
		gml_node_id(b, e);
		keel_buf_adds(b, "\"><data key=\"subject\">");
		xml_text(b, subj);
		keel_buf_adds(b, "</data>");
		if (e->kind) {
			keel_buf_adds(b, "<data key=\"kind\">");
			xml_text(b, keel_str_cstr(e->kind));
			keel_buf_adds(b, "</data>");
		}
		keel_buf_adds(b, "<data key=\"first_seen\">");
		export_time(b, e->first_seen);
		keel_buf_adds(b, "</data><data key=\"last_seen\">");
		export_time(b, e->last_seen);
		keel_buf_adds(b, "</data>");
		while (fi < c.facts.len) {
			const struct gml_fact *f = c.facts.items[fi];
			int k =
			    keel_str_cmp(keel_str_make(f->subject, f->subject_len), subj);
			if (k > 0)
				break;
			fi++;
			if (k < 0)
				continue; /* a fact of an entity first seen later */
			keel_buf_addf(b, "<data key=\"f%zu\">%s</data>",
				      gml_pred_index(&c, f->predicate), f->value);
		}
		keel_buf_adds(b, "</node>\n");
		rc = export_maybe_flush(&out);
	}
	if (rc == 0) {
		keel_buf_add(b, c.edges.data ? c.edges.data : "", c.edges.len);
		keel_buf_adds(b, "  </graph>\n</graphml>\n");
	}
	rc = export_close(&out, rc);
	gml_free(&c);
	return rc;
}

static int export_graphml(struct keel_store *s, const struct keel_export_options *opt,
			  const struct keel_ptrvec *tenants)
{
	if (!opt->dir && tenants->len != 1)
		return keel_store_fail(
		    s, KEEL_EINVAL,
		    "graphml writes one file per tenant: give an output "
		    "directory, or one tenant");
	struct keel_buf path;
	keel_buf_init(&path);
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < tenants->len; i++)
		rc = export_graphml_tenant(s, opt, tenants->items[i], &path);
	keel_buf_free(&path);
	return rc;
}

/* ------------------------------------------------------------------ entry */

/* Creates dir and any missing parents, as mkdir -p does; 0 or an errno. */
static int make_dirs(const char *dir)
{
	char *path = keel_xstrdup(dir);
	int err = 0;
	for (char *p = path + 1; !err; p++) {
		bool end = *p == '\0';
		if (*p != '/' && !end)
			continue;
		*p = '\0';
		struct stat sb;
		if (mkdir(path, 0777) != 0 && errno != EEXIST)
			err = errno;
		else if (stat(path, &sb) != 0)
			err = errno;
		else if (!S_ISDIR(sb.st_mode))
			err = ENOTDIR;
		if (end)
			break;
		*p = '/';
	}
	free(path);
	return err;
}

int keel_export(struct keel_store *s, const struct keel_export_options *given)
{
	if (!s || !given)
		return KEEL_EINVAL;
	struct keel_export_options copy;
	const char *why = keel_options_copy(&copy, sizeof copy, given);
	if (why)
		return keel_store_fail(s, KEEL_EINVAL, "keel_export_options: %s", why);
	const struct keel_export_options *opt = &copy;
	int err = opt->dir && *opt->dir ? make_dirs(opt->dir) : 0;
	if (err)
		return keel_store_fail(s, KEEL_EIO,
				       "cannot create the directory \"%s\": %s", opt->dir,
				       strerror(err));
	struct keel_ptrvec tenants = {0};
	int rc = opt->known_at_set ? keel_store_settle(s, opt->known_at) : 0;
	if (rc == 0 && opt->tenant) {
		/* A tenant with no rows at all is not found, as for keel_dump
		 * and keel_stats (docs/cli.md); one with nothing at --at is an
		 * empty export. Checked before any file is created. */
		rc = keel_store_tenant_known(s, keel_str_cstr(opt->tenant),
					     opt->known_at_set ? opt->known_at
							       : KEEL_TIME_INF);
		keel_ptrvec_push(&tenants, keel_xstrdup(opt->tenant));
	} else if (rc == 0) {
		/* As known at a moment, a tenant that had recorded nothing yet
		 * did not exist, and GraphML writes no file for it. */
		rc = keel_store_tenants_known(
		    s, opt->known_at_set ? opt->known_at : KEEL_TIME_INF, &tenants);
	}
	if (rc == 0) {
		switch (opt->format) {
		case KEEL_EXPORT_CSV:
			rc = export_csv(s, opt, &tenants);
			break;
		case KEEL_EXPORT_NDJSON:
			rc = export_ndjson(s, opt, &tenants);
			break;
		case KEEL_EXPORT_GRAPHML:
			rc = export_graphml(s, opt, &tenants);
			break;
		default:
			rc = keel_store_fail(s, KEEL_EINVAL, "unknown export format");
		}
	}
	for (size_t i = 0; i < tenants.len; i++)
		free(tenants.items[i]);
	keel_ptrvec_free(&tenants);
	return rc;
}

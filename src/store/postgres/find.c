/*
 * find.c - the candidates of keel entities and keel search (src/find.c
 * confirms each): distinct subjects in one range of an index.
 *
 *   entities:          keel_entity_mentions_key (tenant, subject, seq)
 *   entities by kind:  keel_entity_mentions_kind (tenant, kind, subject)
 *   search:            keel_facts_value (tenant, predicate, left(value, 200),
 *                      subject), the whole value compared on the rows found
 *
 * A prefix is a range of the subject: from the prefix itself to the
 * least string above every string that begins with it. Columns are
 * UTF-8 text, so that bound is the prefix with its last character raised
 * by one (UTF-8's byte order is the characters' order), not a byte raised,
 * which could make a string the server refuses.
 */
#include <stdlib.h>
#include <string.h>

#include "parts.h"

/* The least valid UTF-8 string above every string beginning with prefix,
 * into hi; empty when there is none (the prefix is all U+10FFFF). */
static void keel_pg_prefix_end(struct keel_str prefix, struct keel_buf *hi)
{
	keel_buf_reset(hi);
	keel_buf_add(hi, prefix.ptr, prefix.len);
	while (hi->len) {
		/* the last character: its lead byte and its code point */
		size_t at = hi->len - 1;
		while (at > 0 && ((unsigned char)hi->data[at] & 0xc0) == 0x80)
			at--;
		const unsigned char *p = (const unsigned char *)hi->data + at;
		size_t n = hi->len - at;
		uint32_t cp = n == 1   ? p[0]
			      : n == 2 ? ((uint32_t)(p[0] & 0x1f) << 6) | (p[1] & 0x3f)
			      : n == 3
				  ? ((uint32_t)(p[0] & 0x0f) << 12) |
					((uint32_t)(p[1] & 0x3f) << 6) | (p[2] & 0x3f)
				  : ((uint32_t)(p[0] & 0x07) << 18) |
					((uint32_t)(p[1] & 0x3f) << 12) |
					((uint32_t)(p[2] & 0x3f) << 6) | (p[3] & 0x3f);
		hi->len = at;
		if (cp >= 0x10ffff)
			continue; /* nothing above it: raise the one before */
		cp++;
		if (cp >= 0xd800 && cp <= 0xdfff)
			cp = 0xe000;
		char c[4];
		size_t k;
		if (cp < 0x80) {
			c[0] = (char)cp;
			k = 1;
		} else if (cp < 0x800) {
			c[0] = (char)(0xc0 | (cp >> 6));
			c[1] = (char)(0x80 | (cp & 0x3f));
			k = 2;
		} else if (cp < 0x10000) {
			c[0] = (char)(0xe0 | (cp >> 12));
			c[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
			c[2] = (char)(0x80 | (cp & 0x3f));
			k = 3;
		} else {
			c[0] = (char)(0xf0 | (cp >> 18));
			c[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
			c[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
			c[3] = (char)(0x80 | (cp & 0x3f));
			k = 4;
		}
		keel_buf_add(hi, c, k);
		return;
	}
	keel_buf_reset(hi);
}

static int keel_pg_candidates(struct keel_store *s, const struct keel_candidates *q,
			      bool fact, struct keel_ptrvec *out)
{
	struct keel_pg_store *g = keel_pg_downcast(s);
	/* Nothing stored holds a string that is not UTF-8 text. */
	if (!keel_pg_storable(q->tenant) || !keel_pg_storable(q->after) ||
	    !keel_pg_storable(q->prefix) || !keel_pg_storable(q->kind) ||
	    !keel_pg_storable(q->predicate) || !keel_pg_storable(q->value))
		return 0;
	struct keel_pg_params p;
	keel_pg_params_init(&p);
	struct keel_buf *b = &g->sql;
	keel_buf_reset(b);
	keel_pg_param_str(&p, q->tenant);
	if (fact) {
		keel_pg_param_str(&p, q->predicate);
		keel_pg_param_str(&p, q->value);
		keel_buf_adds(
		    b, "SELECT DISTINCT subject FROM keel_fact_rows WHERE tenant = $1 "
		       "AND predicate = $2 AND left(value, 200) = left($3, 200) "
		       "AND value = $3");
	} else if (q->kind.ptr) {
		keel_pg_param_str(&p, q->kind);
		keel_buf_adds(b,
			      "SELECT DISTINCT subject FROM keel_entity_mentions WHERE "
			      "tenant = $1 AND kind = $2");
	} else {
		keel_buf_adds(b,
			      "SELECT DISTINCT subject FROM keel_entity_mentions WHERE "
			      "tenant = $1");
	}
	if (q->after.ptr && (!q->prefix.ptr || keel_str_cmp(q->after, q->prefix) >= 0)) {
		keel_pg_param_str(&p, q->after);
		keel_buf_addf(b, " AND subject > $%d", p.n);
	} else if (q->prefix.ptr) {
		keel_pg_param_str(&p, q->prefix);
		keel_buf_addf(b, " AND subject >= $%d", p.n);
	}
	struct keel_buf hi;
	keel_buf_init(&hi);
	if (q->prefix.ptr)
		keel_pg_prefix_end(q->prefix, &hi);
	if (hi.len) {
		keel_pg_param_str(&p, keel_str_make(hi.data, hi.len));
		keel_buf_addf(b, " AND subject < $%d", p.n);
	}
	keel_pg_param_i64(&p, (int64_t)q->limit);
	keel_buf_addf(b, " ORDER BY subject LIMIT $%d", p.n);
	PGresult *r;
	int rc = keel_pg_exec(g, b->data, &p,
			      fact ? "searching facts" : "listing entities", &r);
	keel_buf_free(&hi);
	if (rc)
		return rc;
	for (int i = 0; i < PQntuples(r); i++) {
		struct keel_str subject = keel_pg_str(r, i, 0);
		keel_ptrvec_push(out, keel_xstrndup(subject.ptr, subject.len));
	}
	PQclear(r);
	return 0;
}

int keel_pg_entity_subjects(struct keel_store *s, const struct keel_candidates *q,
			    struct keel_ptrvec *out)
{
	return keel_pg_candidates(s, q, false, out);
}

int keel_pg_fact_subjects(struct keel_store *s, const struct keel_candidates *q,
			  struct keel_ptrvec *out)
{
	return keel_pg_candidates(s, q, true, out);
}

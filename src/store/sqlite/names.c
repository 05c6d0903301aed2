/*
 * names.c - names as integers (docs/store-sqlite.md, "Names"): the ids
 * of a batch's names, found with one padded lookup of those the handle
 * has not met before, the missing ones inserted.
 *
 * A batch's rows name few distinct texts (a tenant, a few predicates and
 * sources), repeated row after row: the cache answers nearly all of them
 * without SQL, and a new name costs one lookup and one insert, once. The
 * cache is a table of open addressing keyed by the text's bytes; memory
 * is the cache's bound plus what one batch brings.
 */
#include "parts.h"

/* FNV-1a, 64 bits */
static uint64_t keel_sqlite_name_hash(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325u;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3u;
	}
	return h;
}

/* Empties both caches: after a rollback the ids of the names it made may
 * be given to other names. */
void keel_sqlite_names_forget(struct keel_sqlite_store *s)
{
	for (size_t i = 0; i < s->names_cap; i++) {
		free(s->names[i].text);
		s->names[i] = (struct keel_sqlite_name){0};
	}
	s->names_n = 0;
	for (size_t i = 0; i < s->byid_cap; i++) {
		free((char *)(uintptr_t)s->byid[i].ptr);
		s->byid[i] = KEEL_STR_NULL;
	}
}

void keel_sqlite_names_free(struct keel_sqlite_store *s)
{
	keel_sqlite_names_forget(s);
	free(s->names);
	free(s->byid);
	free(s->row_ids);
	for (size_t i = 0; i < KEEL_ARRAY_LEN(s->spill); i++)
		keel_buf_free(&s->spill[i]);
	sqlite3_finalize(s->name_put);
	sqlite3_finalize(s->name_get);
}

int keel_sqlite_name_of(struct keel_sqlite_store *s, int64_t id, struct keel_str *out,
			bool *stable)
{
	bool cached = id > 0 && (uint64_t)id < KEEL_SQLITE_NAMES_BYID_MOST;
	if (cached && (size_t)id < s->byid_cap && s->byid[id].ptr) {
		*out = s->byid[id];
		*stable = true;
		return 0;
	}
	int rc = keel_sqlite_fixed_stmt(s, &s->name_get, "SELECT name FROM names WHERE id = ?1");
	if (rc)
		return rc;
	keel_sqlite_bind_i64(s, s->name_get, 1, id);
	if ((rc = keel_sqlite_start(s, s->name_get)))
		return rc;
	int step = sqlite3_step(s->name_get);
	if (step != SQLITE_ROW) {
		rc = keel_sqlite_finish(s, s->name_get, step);
		return rc ? rc
			  : keel_store_fail(&s->base, KEEL_ESTORE,
					    "sqlite \"%s\": a row names id %lld, which the names "
					    "table lacks",
					    s->path, (long long)id);
	}
	struct keel_str v = keel_sqlite_col_str(s->name_get, 0);
	char *copy;
	if (cached) {
		if ((size_t)id >= s->byid_cap) {
			size_t cap = s->byid_cap ? s->byid_cap : 64;
			while (cap <= (size_t)id)
				cap *= 2;
			s->byid = keel_xrealloc(s->byid, cap * sizeof *s->byid);
			for (size_t i = s->byid_cap; i < cap; i++)
				s->byid[i] = KEEL_STR_NULL;
			s->byid_cap = cap;
		}
		copy = keel_xmalloc(v.len + 1);
		if (v.len)
			memcpy(copy, v.ptr, v.len);
		copy[v.len] = '\0';
		s->byid[id] = keel_str_make(copy, v.len);
		*out = s->byid[id];
		*stable = true;
	} else {
		struct keel_buf *b = &s->spill[s->spill_next++ % KEEL_ARRAY_LEN(s->spill)];
		keel_buf_reset(b);
		keel_buf_add(b, v.ptr ? v.ptr : "", v.len);
		*out = keel_str_make(b->data ? b->data : "", v.len);
		*stable = false;
	}
	return keel_sqlite_finish(s, s->name_get, SQLITE_DONE);
}

/* The slot of text, or the empty slot where it would go. */
static struct keel_sqlite_name *keel_sqlite_name_slot(struct keel_sqlite_name *slots,
						      size_t cap, const char *p, size_t n,
						      uint64_t h)
{
	size_t i = (size_t)h & (cap - 1);
	for (;; i = (i + 1) & (cap - 1)) {
		struct keel_sqlite_name *e = &slots[i];
		if (!e->text ||
		    (e->hash == h && e->len == n && (n == 0 || memcmp(e->text, p, n) == 0)))
			return e;
	}
}

static void keel_sqlite_names_grow(struct keel_sqlite_store *s)
{
	size_t cap = s->names_cap ? 2 * s->names_cap : 256;
	struct keel_sqlite_name *slots = keel_xcalloc(cap, sizeof *slots);
	for (size_t i = 0; i < s->names_cap; i++) {
		struct keel_sqlite_name *e = &s->names[i];
		if (e->text)
			*keel_sqlite_name_slot(slots, cap, e->text, e->len, e->hash) = *e;
	}
	free(s->names);
	s->names = slots;
	s->names_cap = cap;
}

/* The entry of v, added (id 0) when the cache does not hold it. */
static struct keel_sqlite_name *keel_sqlite_name_find(struct keel_sqlite_store *s,
						      struct keel_str v, bool add)
{
	const char *p = v.ptr ? v.ptr : "";
	uint64_t h = keel_sqlite_name_hash(p, v.len);
	if (add && 2 * (s->names_n + 1) > s->names_cap)
		keel_sqlite_names_grow(s);
	struct keel_sqlite_name *e = keel_sqlite_name_slot(s->names, s->names_cap, p, v.len, h);
	if (!e->text && add) {
		e->text = keel_xmalloc(v.len + 1);
		memcpy(e->text, p, v.len);
		e->text[v.len] = '\0';
		e->len = v.len;
		e->hash = h;
		e->id = 0;
		s->names_n++;
	}
	return e;
}

static void keel_sqlite_bind_name_key(struct keel_sqlite_store *s, sqlite3_stmt *st, int p,
				      const struct keel_sqlite_key *k)
{
	const struct keel_sqlite_name *e = k->ptr;
	keel_sqlite_bind_str(s, st, p, keel_str_make(e->text, e->len));
}

static void keel_sqlite_name_row(struct keel_sqlite_store *s, sqlite3_stmt *st,
				 const struct keel_sqlite_key *k, void *ud)
{
	(void)s;
	(void)ud;
	struct keel_sqlite_name *e = k->ptr;
	e->id = sqlite3_column_int64(st, 1);
}

static struct keel_str keel_sqlite_row_name(const struct keel_assertion *r, int k)
{
	return k == 0 ? r->tenant : k == 1 ? r->name : r->asserted_by.source;
}

/* The names the cache lacks: looked up, and those the store lacks
 * inserted. */
static int keel_sqlite_names_resolve(struct keel_sqlite_store *s)
{
	keel_sqlite_keys_reset(s);
	for (size_t i = 0; i < s->names_cap; i++)
		if (s->names[i].text && !s->names[i].id)
			keel_sqlite_keys_push(s, &s->names[i]);
	if (!s->nkeys)
		return 0;
	int rc = keel_sqlite_run_padded(s, KEEL_SQ_NAMES, keel_sqlite_bind_name_key,
					keel_sqlite_name_row, NULL);
	if (rc)
		return rc;
	for (size_t i = 0; i < s->nkeys; i++) {
		struct keel_sqlite_name *e = s->keys[i].ptr;
		if (e->id)
			continue;
		if ((rc = keel_sqlite_fixed_stmt(s, &s->name_put,
						 "INSERT INTO names (name) VALUES (?1)")))
			return rc;
		keel_sqlite_bind_str(s, s->name_put, 1, keel_str_make(e->text, e->len));
		if ((rc = keel_sqlite_run(s, s->name_put)))
			return rc;
		e->id = sqlite3_last_insert_rowid(s->db);
	}
	return 0;
}

int keel_sqlite_names_ids(struct keel_sqlite_store *s, const struct keel_assertion *rows,
			  size_t n)
{
	if (s->names_n > KEEL_SQLITE_NAMES_MOST)
		keel_sqlite_names_forget(s);
	if (3 * n > s->row_ids_cap) {
		s->row_ids_cap = 3 * n;
		s->row_ids = keel_xrealloc(s->row_ids, s->row_ids_cap * sizeof *s->row_ids);
	}
	bool missing = false;
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 3; k++) {
			struct keel_sqlite_name *e =
			    keel_sqlite_name_find(s, keel_sqlite_row_name(&rows[i], k), true);
			missing |= !e->id;
		}
	if (missing) {
		int rc = keel_sqlite_names_resolve(s);
		if (rc) {
			/* entries without an id must not stay */
			keel_sqlite_names_forget(s);
			return rc;
		}
	}
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 3; k++)
			s->row_ids[3 * i + (size_t)k] =
			    keel_sqlite_name_find(s, keel_sqlite_row_name(&rows[i], k), false)->id;
	return 0;
}

/*
 * spool.c - the batches of spool.h: each one length-prefixed blob of
 * its rows then its mentions, every string as a 32-bit length (all ones:
 * absent) and its bytes.
 */
#include "spool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spill.h"

#define KEEL_SPOOL_NULL 0xffffffffu

int keel_spool_open(struct keel_spool *sp)
{
	memset(sp, 0, sizeof *sp);
	keel_buf_init(&sp->blob);
	sp->fd = keel_spill_tmpfile(sp->err, sizeof sp->err);
	if (sp->fd < 0)
		return -1;
	sp->f = fdopen(sp->fd, "w+");
	if (!sp->f) {
		snprintf(sp->err, sizeof sp->err, "opening a temporary file: %s",
			 strerror(errno));
		close(sp->fd);
		sp->fd = -1;
		return -1;
	}
	setvbuf(sp->f, NULL, _IOFBF, 1 << 20);
	return 0;
}

void keel_spool_close(struct keel_spool *sp)
{
	if (sp->f)
		fclose(sp->f); /* closes fd too */
	else if (sp->fd >= 0)
		close(sp->fd);
	sp->f = NULL;
	sp->fd = -1;
	keel_buf_free(&sp->blob);
}

static void put_u32(struct keel_buf *b, uint32_t v)
{
	keel_buf_add(b, &v, sizeof v);
}

static void put_i64(struct keel_buf *b, int64_t v)
{
	keel_buf_add(b, &v, sizeof v);
}

static void put_str(struct keel_buf *b, struct keel_str s)
{
	put_u32(b, s.ptr ? (uint32_t)s.len : KEEL_SPOOL_NULL);
	if (s.ptr)
		keel_buf_add(b, s.ptr, s.len);
}

int keel_spool_put(struct keel_spool *sp, const struct keel_append *a)
{
	struct keel_buf *b = &sp->blob;
	keel_buf_reset(b);
	put_i64(b, 0); /* the blob's length, set below */
	put_i64(b, (int64_t)a->nrows);
	put_i64(b, (int64_t)a->nmentions);
	for (size_t i = 0; i < a->nrows; i++) {
		const struct keel_assertion *r = &a->rows[i];
		put_u32(b, (uint32_t)r->kind | (r->linked ? 0x100u : 0));
		put_i64(b, r->valid_from);
		put_i64(b, r->recorded_at);
		put_str(b, r->subject);
		put_str(b, r->name);
		put_str(b, r->object);
		put_str(b, r->value);
		put_str(b, r->asserted_by.source);
		put_str(b, r->asserted_by.id);
	}
	for (size_t i = 0; i < a->nmentions; i++) {
		const struct keel_mention *m = &a->mentions[i];
		put_i64(b, m->kind_time);
		put_i64(b, m->first_seen);
		put_i64(b, m->last_seen);
		put_i64(b, m->recorded_at);
		put_str(b, m->subject);
		put_str(b, m->kind);
	}
	int64_t len = (int64_t)b->len;
	memcpy(b->data, &len, sizeof len);
	if (fwrite(b->data, 1, b->len, sp->f) != b->len) {
		snprintf(sp->err, sizeof sp->err, "writing a temporary file: %s",
			 strerror(errno));
		return -1;
	}
	return 0;
}

int keel_spool_rewind(struct keel_spool *sp)
{
	if (fflush(sp->f) != 0 || fseeko(sp->f, 0, SEEK_SET) != 0) {
		snprintf(sp->err, sizeof sp->err, "rewinding a temporary file: %s",
			 strerror(errno));
		return -1;
	}
	return 0;
}

/* Reading one blob: p walks it, end bounds it. */
struct keel_spool_in {
	const char *p, *end;
	bool bad;
};

/* n bytes into v, or in->bad when the blob has fewer left */
static void get_bytes(struct keel_spool_in *in, void *v, size_t n)
{
	if ((size_t)(in->end - in->p) < n) {
		in->bad = true;
		return;
	}
	memcpy(v, in->p, n);
	in->p += n;
}

static int64_t get_i64(struct keel_spool_in *in)
{
	int64_t v = 0;
	get_bytes(in, &v, sizeof v);
	return v;
}

static uint32_t get_u32(struct keel_spool_in *in)
{
	uint32_t v = 0;
	get_bytes(in, &v, sizeof v);
	return v;
}

static struct keel_str get_str(struct keel_spool_in *in)
{
	uint32_t n = get_u32(in);
	if (n == KEEL_SPOOL_NULL || in->bad)
		return KEEL_STR_NULL;
	if ((size_t)(in->end - in->p) < n) {
		in->bad = true;
		return KEEL_STR_NULL;
	}
	struct keel_str s = keel_str_make(in->p, n);
	in->p += n;
	return s;
}

int keel_spool_get(struct keel_spool *sp, struct keel_append_builder *b,
		   struct keel_str tenant)
{
	int64_t len = 0;
	size_t got = fread(&len, 1, sizeof len, sp->f);
	if (got == 0 && feof(sp->f))
		return 0;
	if (got != sizeof len || len < (int64_t)(3 * sizeof len)) {
		snprintf(sp->err, sizeof sp->err, "reading a temporary file: %s",
			 ferror(sp->f) ? strerror(errno) : "damaged");
		return -1;
	}
	struct keel_buf *blob = &sp->blob;
	keel_buf_reset(blob);
	keel_buf_reserve(blob, (size_t)len);
	size_t rest = (size_t)len - sizeof len;
	if (fread(blob->data, 1, rest, sp->f) != rest) {
		snprintf(sp->err, sizeof sp->err, "reading a temporary file: %s",
			 ferror(sp->f) ? strerror(errno) : "it ended early");
		return -1;
	}
	struct keel_spool_in in = {blob->data, blob->data + rest, false};
	int64_t nrows = get_i64(&in), nmentions = get_i64(&in);
	for (int64_t i = 0; i < nrows && !in.bad; i++) {
		struct keel_assertion r = {.tenant = tenant};
		uint32_t k = get_u32(&in);
		r.kind = (enum keel_row_kind)(k & 0xff);
		r.linked = (k & 0x100u) != 0;
		r.valid_from = get_i64(&in);
		r.recorded_at = get_i64(&in);
		r.subject = get_str(&in);
		r.name = get_str(&in);
		r.object = get_str(&in);
		r.value = get_str(&in);
		r.asserted_by.source = get_str(&in);
		r.asserted_by.id = get_str(&in);
		if (!in.bad)
			keel_append_add_row(b, &r);
	}
	for (int64_t i = 0; i < nmentions && !in.bad; i++) {
		struct keel_mention m = {.tenant = tenant};
		m.kind_time = get_i64(&in);
		m.first_seen = get_i64(&in);
		m.last_seen = get_i64(&in);
		m.recorded_at = get_i64(&in);
		m.subject = get_str(&in);
		m.kind = get_str(&in);
		if (!in.bad)
			keel_append_add_mention(b, &m);
	}
	if (in.bad || in.p != in.end) {
		snprintf(sp->err, sizeof sp->err, "reading a temporary file: damaged");
		return -1;
	}
	return 1;
}

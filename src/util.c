/*
 * util.c - see util.h. Buffers and arenas abort on allocation failure: a
 * library that cannot allocate a few kilobytes cannot keep its promises
 * either, and failing loudly beats a half-written batch.
 */
#include "util.h"

#include "keel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void keel_oom(void)
{
	fputs("keel: out of memory\n", stderr);
	abort();
}

void *keel_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		keel_oom();
	return p;
}

void *keel_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		keel_oom();
	return p;
}

void *keel_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		keel_oom();
	return q;
}

char *keel_xstrndup(const char *s, size_t n)
{
	char *p = keel_xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *keel_xstrdup(const char *s)
{
	return keel_xstrndup(s, strlen(s));
}

struct keel_str keel_str_cstr(const char *s)
{
	return s ? keel_str_make(s, strlen(s)) : KEEL_STR_NULL;
}

int keel_str_cmp(struct keel_str a, struct keel_str b)
{
	if (!a.ptr || !b.ptr)
		return (a.ptr != NULL) - (b.ptr != NULL);
	size_t n = a.len < b.len ? a.len : b.len;
	int c = n ? memcmp(a.ptr, b.ptr, n) : 0;
	if (c)
		return c;
	return (a.len > b.len) - (a.len < b.len);
}

/* ---------------------------------------------------------------- buffer */

void keel_buf_init(struct keel_buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void keel_buf_free(struct keel_buf *b)
{
	free(b->data);
	keel_buf_init(b);
}

void keel_buf_reset(struct keel_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = 0;
}

void keel_buf_reserve(struct keel_buf *b, size_t n)
{
	if (b->len + n + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->len + n + 1)
		cap *= 2;
	b->data = keel_xrealloc(b->data, cap);
	b->cap = cap;
}

void keel_buf_add(struct keel_buf *b, const void *p, size_t n)
{
	keel_buf_reserve(b, n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0;
}

void keel_buf_addc(struct keel_buf *b, char c)
{
	keel_buf_reserve(b, 1);
	b->data[b->len++] = c;
	b->data[b->len] = 0;
}

void keel_buf_adds(struct keel_buf *b, const char *s)
{
	keel_buf_add(b, s, strlen(s));
}

void keel_buf_addstr(struct keel_buf *b, struct keel_str s)
{
	keel_buf_add(b, s.ptr, s.len);
}

void keel_buf_vaddf(struct keel_buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	va_copy(cp, ap);
	int n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return;
	keel_buf_reserve(b, (size_t)n);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void keel_buf_addf(struct keel_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	keel_buf_vaddf(b, fmt, ap);
	va_end(ap);
}

void keel_buf_addi64(struct keel_buf *b, int64_t v)
{
	char tmp[24];
	char *p = tmp + sizeof tmp;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	keel_buf_add(b, p, (size_t)(tmp + sizeof tmp - p));
}

/* ----------------------------------------------------------------- arena */

struct keel_arena_chunk {
	struct keel_arena_chunk *next;
	size_t size;
	/* data follows, 16-byte aligned */
	_Alignas(16) char data[];
};

#define KEEL_ARENA_CHUNK (64 * 1024)
/* What reset keeps for reuse; a bigger batch's surplus is freed. */
#define KEEL_ARENA_KEEP (4 * 1024 * 1024)

void keel_arena_init(struct keel_arena *a)
{
	a->head = NULL;
	a->chunk = NULL;
	a->cur = NULL;
	a->end = NULL;
	a->bytes = 0;
	a->chunk_size = 0;
}

#define KEEL_ARENA_LARGE (2 * 1024 * 1024)

void keel_arena_init_large(struct keel_arena *a)
{
	keel_arena_init(a);
	a->chunk_size = KEEL_ARENA_LARGE;
}

static void keel_arena_free_list(struct keel_arena_chunk *c)
{
	while (c) {
		struct keel_arena_chunk *next = c->next;
		free(c);
		c = next;
	}
}

void keel_arena_free(struct keel_arena *a)
{
	size_t chunk_size = a->chunk_size;
	keel_arena_free_list(a->head);
	keel_arena_init(a);
	a->chunk_size = chunk_size;
}

void keel_arena_reset(struct keel_arena *a)
{
	if (!a->head)
		return;
	size_t kept = 0;
	struct keel_arena_chunk **link = &a->head;
	while (*link && kept + (*link)->size <= KEEL_ARENA_KEEP) {
		kept += (*link)->size;
		link = &(*link)->next;
	}
	keel_arena_free_list(*link);
	*link = NULL;
	a->bytes = kept;
	a->chunk = a->head;
	a->cur = a->head ? a->head->data : NULL;
	a->end = a->head ? a->head->data + a->head->size : NULL;
}

/* Moves to the next kept chunk that can hold n bytes, or inserts a new one
 * after the current chunk. */
static void keel_arena_grow(struct keel_arena *a, size_t n)
{
	struct keel_arena_chunk *next = a->chunk ? a->chunk->next : a->head;
	if (!next || next->size < n) {
		size_t unit = a->chunk_size ? a->chunk_size : KEEL_ARENA_CHUNK;
		size_t size = n > unit ? n : unit;
		struct keel_arena_chunk *c;
		if (a->chunk_size) {
			/* Whole huge pages: the header shares the first one. */
			size_t total = (sizeof *c + size + KEEL_ARENA_LARGE - 1) &
				       ~(size_t)(KEEL_ARENA_LARGE - 1);
			c = aligned_alloc(KEEL_ARENA_LARGE, total);
			if (!c)
				c = keel_xmalloc(total);
			madvise(c, total, MADV_HUGEPAGE);
			size = total - sizeof *c;
		} else {
			c = keel_xmalloc(sizeof *c + size);
		}
		c->size = size;
		c->next = next;
		if (a->chunk)
			a->chunk->next = c;
		else
			a->head = c;
		a->bytes += size;
		next = c;
	}
	a->chunk = next;
	a->cur = next->data;
	a->end = next->data + next->size;
}

/* keel_arena_alloc's way out when the current chunk is full (n rounded). */
void *keel_arena_alloc_grow(struct keel_arena *a, size_t n)
{
	keel_arena_grow(a, n);
	void *p = a->cur;
	a->cur += n;
	return p;
}

struct keel_str keel_arena_str(struct keel_arena *a, struct keel_str s)
{
	if (!s.ptr)
		return s;
	char *p = keel_arena_alloc(a, s.len + 1);
	memcpy(p, s.ptr, s.len);
	p[s.len] = 0;
	return keel_str_make(p, s.len);
}

/* ------------------------------------------------------------------ hash */

static inline uint64_t keel_mix(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;
	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* A multiply-fold hash over 8-byte little-endian words. The constants are
 * arbitrary odd 64-bit numbers (digits of pi and e); the value is part of
 * the stored format, so this function must never change. */
/* The last n < 8 bytes at p as a little-endian number (byte i at bits
 * 8i), read with two overlapping loads instead of a loop; `whole` says
 * the 8 bytes before p + n belong to the input, so one load ending there
 * will do. The value is the loop's, which the hash must keep. */
static inline uint64_t keel_read_tail(const unsigned char *p, size_t n, bool whole)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (n == 0)
		return 0;
	if (whole)
		return keel_le64(p + n - 8) >> (64 - 8 * n);
	if (n >= 4) {
		uint32_t lo, hi;
		memcpy(&lo, p, 4);
		memcpy(&hi, p + n - 4, 4);
		return (uint64_t)lo | (uint64_t)hi << (8 * (n - 4));
	}
	return (uint64_t)p[0] | (uint64_t)p[n / 2] << (8 * (n / 2)) |
	       (uint64_t)p[n - 1] << (8 * (n - 1));
#else
	(void)whole;
	uint64_t tail = 0;
	for (size_t i = 0; i < n; i++)
		tail |= (uint64_t)p[i] << (8 * i);
	return tail;
#endif
}

uint64_t keel_hash64(const void *data, size_t n, uint64_t seed)
{
	const uint64_t k0 = 0x243f6a8885a308d3ull, k1 = 0xb7e151628aed2a6bull;
	const unsigned char *p = data;
	const bool whole = n >= 8;
	uint64_t h = seed ^ k0 ^ (uint64_t)n * k1;
	while (n >= 16) {
		h = keel_mix(h ^ keel_le64(p), k1) ^ keel_mix(keel_le64(p + 8) ^ k0, h | 1);
		p += 16;
		n -= 16;
	}
	if (n >= 8) {
		h = keel_mix(h ^ keel_le64(p), k1);
		p += 8;
		n -= 8;
	}
	h = keel_mix(h ^ keel_read_tail(p, n, whole), k0 ^ (uint64_t)n);
	return keel_mix(h, k1) ^ (h >> 29);
}

/* ------------------------------------------------------------------- map */

void keel_map_init(struct keel_map *m)
{
	m->hashes = NULL;
	m->values = NULL;
	m->cap = 0;
	m->count = 0;
}

void keel_map_free(struct keel_map *m)
{
	free(m->hashes);
	free(m->values);
	keel_map_init(m);
}

void keel_map_clear(struct keel_map *m)
{
	if (m->count)
		memset(m->hashes, 0, m->cap * sizeof *m->hashes);
	m->count = 0;
}

static inline uint64_t keel_map_key(uint64_t h)
{
	return h ? h : 1;
}

size_t keel_map_next(const struct keel_map *m, uint64_t hash, size_t slot)
{
	if (!m->cap)
		return SIZE_MAX;
	uint64_t h = keel_map_key(hash);
	size_t mask = m->cap - 1;
	for (size_t i = (slot + 1) & mask;; i = (i + 1) & mask) {
		if (m->hashes[i] == 0)
			return SIZE_MAX;
		if (m->hashes[i] == h)
			return i;
	}
}

size_t keel_map_first(const struct keel_map *m, uint64_t hash)
{
	if (!m->cap)
		return SIZE_MAX;
	size_t mask = m->cap - 1;
	size_t start = (size_t)keel_map_key(hash) & mask;
	uint64_t h = keel_map_key(hash);
	if (m->hashes[start] == h)
		return start;
	if (m->hashes[start] == 0)
		return SIZE_MAX;
	return keel_map_next(m, hash, start);
}

static void keel_map_insert(struct keel_map *m, uint64_t h, void *value)
{
	size_t mask = m->cap - 1;
	size_t i = (size_t)h & mask;
	while (m->hashes[i])
		i = (i + 1) & mask;
	m->hashes[i] = h;
	m->values[i] = value;
	m->count++;
}

void keel_map_put(struct keel_map *m, uint64_t hash, void *value)
{
	/* Grow at half full: linear probing stays short for misses. */
	if ((m->count + 1) * 2 > m->cap) {
		size_t old_cap = m->cap;
		uint64_t *old_h = m->hashes;
		void **old_v = m->values;
		m->cap = old_cap ? old_cap * 2 : 64;
		m->hashes = keel_xcalloc(m->cap, sizeof *m->hashes);
		m->values = keel_xmalloc(m->cap * sizeof *m->values);
		m->count = 0;
		for (size_t i = 0; i < old_cap; i++)
			if (old_h[i])
				keel_map_insert(m, old_h[i], old_v[i]);
		free(old_h);
		free(old_v);
	}
	keel_map_insert(m, keel_map_key(hash), value);
}

/* ---------------------------------------------------------------- vector */

/* keel_ptrvec_push's way out when the vector is full. */
void keel_ptrvec_grow(struct keel_ptrvec *v)
{
	v->cap = v->cap ? v->cap * 2 : 16;
	v->items = keel_xrealloc(v->items, v->cap * sizeof *v->items);
}

void keel_ptrvec_free(struct keel_ptrvec *v)
{
	free(v->items);
	v->items = NULL;
	v->len = 0;
	v->cap = 0;
}

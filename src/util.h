/*
 * util.h - small building blocks shared by the whole library: string views,
 * a growable byte buffer, an arena for per-batch allocations, a 64-bit hash
 * and a hash table of pointers keyed by bytes.
 *
 * Ownership: a keel_buf owns its bytes; an arena owns everything allocated
 * from it until keel_arena_reset/keel_arena_free; views own nothing.
 */
#ifndef KEEL_UTIL_H
#define KEEL_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define KEEL_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Bytes a writer of large output (dump, export) collects in its buffer
 * before one fwrite: few system calls, bounded memory. */
#define KEEL_OUTPUT_CHUNK ((size_t)1 << 20)

/* A byte string that does not own its bytes. ptr == NULL means "absent"
 * (JSON null, no kind, open row), which is distinct from an empty string. */
struct keel_str {
	const char *ptr;
	size_t len;
};

#define KEEL_STR_NULL ((struct keel_str){NULL, 0})
static inline struct keel_str keel_str_make(const char *p, size_t n)
{
	return (struct keel_str){p, n};
}
struct keel_str keel_str_cstr(const char *s);

/* The eight bytes at p as a little-endian word, on any host. */
static inline uint64_t keel_le64(const void *p)
{
	uint64_t w;
	memcpy(&w, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

/* The value of a hexadecimal digit (either case), or -1. */
static inline int keel_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Equal bytes, for the short strings keys are made of: up to 16 bytes
 * compare as two overlapping words (first and last bytes; nothing past
 * either string is read), up to 32 as four (event types are about 30
 * bytes), longer ones through memcmp. */
static inline bool keel_bytes_eq(const char *a, const char *b, size_t n)
{
	uint64_t x0, x1, y0, y1;
	uint32_t u0, u1, v0, v1;
	if (n >= 8 && n <= 16) {
		memcpy(&x0, a, 8);
		memcpy(&y0, b, 8);
		memcpy(&x1, a + n - 8, 8);
		memcpy(&y1, b + n - 8, 8);
		return ((x0 ^ y0) | (x1 ^ y1)) == 0;
	}
	if (n > 16 && n <= 32) {
		uint64_t x2, x3, y2, y3;
		memcpy(&x0, a, 8);
		memcpy(&y0, b, 8);
		memcpy(&x1, a + 8, 8);
		memcpy(&y1, b + 8, 8);
		memcpy(&x2, a + n - 16, 8);
		memcpy(&y2, b + n - 16, 8);
		memcpy(&x3, a + n - 8, 8);
		memcpy(&y3, b + n - 8, 8);
		return ((x0 ^ y0) | (x1 ^ y1) | (x2 ^ y2) | (x3 ^ y3)) == 0;
	}
	if (n >= 4 && n < 8) {
		memcpy(&u0, a, 4);
		memcpy(&v0, b, 4);
		memcpy(&u1, a + n - 4, 4);
		memcpy(&v1, b + n - 4, 4);
		return ((u0 ^ v0) | (u1 ^ v1)) == 0;
	}
	if (n < 4) {
		for (size_t i = 0; i < n; i++)
			if (a[i] != b[i])
				return false;
		return true;
	}
	return memcmp(a, b, n) == 0;
}

/* Inline: every key lookup of a batch compares several strings. */
static inline bool keel_str_eq(struct keel_str a, struct keel_str b)
{
	if (!a.ptr || !b.ptr)
		return a.ptr == b.ptr;
	return a.len == b.len && keel_bytes_eq(a.ptr, b.ptr, a.len);
}
/* Bytewise order (memcmp, then length); absent sorts first. */
int keel_str_cmp(struct keel_str a, struct keel_str b);

/* Growable byte buffer, always NUL-terminated after keel_buf_* calls. */
struct keel_buf {
	char *data;
	size_t len;
	size_t cap;
};

void keel_buf_init(struct keel_buf *b);
void keel_buf_free(struct keel_buf *b);
void keel_buf_reset(struct keel_buf *b);
/* Ensures room for n more bytes (plus the NUL). Aborts on out of memory:
 * the library treats allocation failure as fatal, like git's xmalloc. */
void keel_buf_reserve(struct keel_buf *b, size_t n);
void keel_buf_add(struct keel_buf *b, const void *p, size_t n);
void keel_buf_addc(struct keel_buf *b, char c);
void keel_buf_adds(struct keel_buf *b, const char *s);
void keel_buf_addstr(struct keel_buf *b, struct keel_str s);
void keel_buf_addf(struct keel_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void keel_buf_vaddf(struct keel_buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
void keel_buf_addi64(struct keel_buf *b, int64_t v);
/* Allocation wrappers that abort on failure. */
void *keel_xmalloc(size_t n);
void *keel_xcalloc(size_t n, size_t size);
void *keel_xrealloc(void *p, size_t n);
char *keel_xstrdup(const char *s);
char *keel_xstrndup(const char *s, size_t n);

/* Arena: bump allocation in chunks; freed all at once. Reset rewinds to
 * the first chunk and keeps the others for reuse, so a batch loop reaches a
 * steady state with no malloc and no page faults. */
struct keel_arena_chunk;
struct keel_arena {
	struct keel_arena_chunk *head;	/* first chunk */
	struct keel_arena_chunk *chunk; /* chunk being filled */
	char *cur;
	char *end;
	size_t bytes; /* total chunk bytes held, for memory accounting */
	size_t chunk_size; /* 0: the default (64 KiB) */
};

void keel_arena_init(struct keel_arena *a);
/* An arena for long-lived, growing state (the memory store): 2 MiB chunks
 * backed by transparent huge pages where the kernel offers them, which
 * cuts page faults and TLB misses on a large heap. */
void keel_arena_init_large(struct keel_arena *a);
void keel_arena_free(struct keel_arena *a);
/* Rewinds; keeps up to a few MiB of chunks for reuse, frees the rest. */
void keel_arena_reset(struct keel_arena *a);
/* 8-byte aligned. Inline: the library allocates a few dozen times per
 * event, nearly always from the current chunk. */
void *keel_arena_alloc_grow(struct keel_arena *a, size_t n);
static inline void *keel_arena_alloc(struct keel_arena *a, size_t n)
{
	n = (n + 7) & ~(size_t)7;
	if (__builtin_expect(a->cur && (size_t)(a->end - a->cur) >= n, 1)) {
		void *p = a->cur;
		a->cur += n;
		return p;
	}
	return keel_arena_alloc_grow(a, n);
}
/* Copies s into the arena (NUL-terminated); absent stays absent. */
struct keel_str keel_arena_str(struct keel_arena *a, struct keel_str s);

/* 64-bit hash of bytes; stable across machines and versions (it is stored
 * in the event log), so never change it. */
uint64_t keel_hash64(const void *p, size_t n, uint64_t seed);

/* Open-addressing hash table from a 64-bit hash plus caller equality to a
 * pointer. The table stores (hash, value) only; the caller compares keys
 * through the values it stored. */
struct keel_map {
	uint64_t *hashes; /* 0 = empty slot; stored hashes are forced non-zero */
	void **values;
	size_t cap; /* power of two */
	size_t count;
};

void keel_map_init(struct keel_map *m);
void keel_map_free(struct keel_map *m);
void keel_map_clear(struct keel_map *m);
/* Iteration over candidates with equal hash:
 *   for (size_t i = keel_map_first(m, h); i != SIZE_MAX; i = keel_map_next(m, h, i))
 *       if (matches(m->values[i])) ...
 */
size_t keel_map_first(const struct keel_map *m, uint64_t hash);
size_t keel_map_next(const struct keel_map *m, uint64_t hash, size_t slot);
void keel_map_put(struct keel_map *m, uint64_t hash, void *value);
/* Growable array of pointers. */
struct keel_ptrvec {
	void **items;
	size_t len;
	size_t cap;
};
/* Inline: a batch pushes a dozen pointers per event (events, rows, ...). */
void keel_ptrvec_grow(struct keel_ptrvec *v);
static inline void keel_ptrvec_push(struct keel_ptrvec *v, void *p)
{
	if (__builtin_expect(v->len == v->cap, 0))
		keel_ptrvec_grow(v);
	v->items[v->len++] = p;
}
void keel_ptrvec_free(struct keel_ptrvec *v);

#endif

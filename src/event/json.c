/*
 * json.c - Keel's validating JSON parser (RFC 8259 plus the rules in
 * json.h), RFC 6901 pointer lookup and compaction.
 *
 * The parser is a single loop over the text with an explicit stack of the
 * open containers (at most KEEL_JSON_MAX_DEPTH frames on the C stack), so
 * no input can make it recurse or overflow the stack. It never backtracks
 * and reports the first rule broken in text order.
 *
 * Memory: each parse resets the doc's arena and takes from it one string
 * area of text_len + 16 bytes, into which every string (decoded) and every
 * number (its lexeme) is copied NUL-terminated, plus blocks of nodes. A
 * JSON string never decodes to more bytes than it occupies in the text
 * (two quotes buy the NUL), so that area cannot overflow, and with a 64 KiB
 * arena chunk kept across resets an envelope costs no malloc at all.
 *
 * Speed: the string scanner copies and checks 16 bytes at a time (SSE2, on
 * every x86-64) or 8 (SWAR, elsewhere and for a string's last bytes) and
 * leaves the loop only at a quote, a backslash, a control character or a
 * non-ASCII byte, which is then validated as UTF-8 byte by byte.
 * Duplicate keys are found by comparing with the previous members while an
 * object is small and through a seeded hash table per nesting level once
 * it has more than DUP_LINEAR members, so large objects stay linear.
 */
#include "json.h"
#include "json_write.h"
#include "keel.h"
#include "utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define JSON_SWAR 1
#else
#define JSON_SWAR 0
#endif

#if defined(__SSE2__)
#include <emmintrin.h>
#define JSON_SSE2 1
#else
#define JSON_SSE2 0
#endif

/* Members compared one by one before an object switches to hashing. */
#define DUP_LINEAR 16
/* Nodes per arena block; 192 * 80 bytes stays under the arena's one-off
 * threshold (a quarter of its 64 KiB chunk), so blocks share chunks. */
#define NODE_BLOCK 192

__extension__ typedef unsigned __int128 json_u128;

struct keyslot {
	const char *key;
	size_t len;
	uint32_t gen; /* the slot is live when gen equals the table's gen */
	uint32_t hash;
};

/* A duplicate-key table for the object open at one nesting level. Slots are
 * stamped with a generation so reusing the table for the next object costs
 * nothing, however large the table grew for an earlier one. */
struct keytab {
	struct keyslot *slots;
	size_t cap; /* power of two, or 0 */
	size_t count;
	uint32_t gen;
};

struct json_scratch {
	uint64_t seed; /* random per doc: crafted colliding keys cannot be aimed */
	struct keytab tabs[KEEL_JSON_MAX_DEPTH];
};

struct frame {
	struct keel_json *node;
	struct keel_json **tail; /* where the next member is linked in */
	size_t count;
	bool is_object;
	bool hashed;   /* keys live in the level's keytab */
	uint64_t seen; /* while linear: one bit per key so far, a tiny Bloom filter */
};

struct parser {
	struct keel_json_doc *doc;
	const char *text;
	const char *end;
	struct keel_json *ncur;
	struct keel_json *nend;
	struct keel_json_error *err;
};

/* ------------------------------------------------------------ lifecycle */

void keel_json_doc_init(struct keel_json_doc *doc)
{
	keel_arena_init(&doc->arena);
	doc->root = NULL;
	doc->text = NULL;
	doc->text_len = 0;
	doc->compact = false;
	doc->scratch = NULL;
}

void keel_json_doc_free(struct keel_json_doc *doc)
{
	struct json_scratch *sc = doc->scratch;
	if (sc) {
		for (size_t i = 0; i < KEEL_JSON_MAX_DEPTH; i++)
			free(sc->tabs[i].slots);
		free(sc);
	}
	keel_arena_free(&doc->arena);
	keel_json_doc_init(doc);
}

static struct json_scratch *scratch_get(struct keel_json_doc *doc)
{
	struct json_scratch *sc = doc->scratch;
	if (sc)
		return sc;
	sc = keel_xcalloc(1, sizeof *sc);
	uint64_t seed = 0;
	if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed) {
		/* No entropy yet (early boot): the clock and ASLR will do. */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
		       (uint64_t)(uintptr_t)sc;
	}
	sc->seed = seed | 1;
	doc->scratch = sc;
	return sc;
}

/* --------------------------------------------------------------- errors */

static __attribute__((cold, noinline)) int fail(struct parser *p, const char *at,
						const char *msg)
{
	if (p->err) {
		size_t n = strlen(msg);
		if (n >= sizeof p->err->msg)
			n = sizeof p->err->msg - 1;
		memcpy(p->err->msg, msg, n);
		p->err->msg[n] = 0;
		p->err->offset = (size_t)(at - p->text);
	}
	return -1;
}

/* `duplicate key "K"` with K escaped for display by util.h's JSON string
 * writer, a character at a time into a small stack buffer (at most 6
 * bytes and the NUL: it never grows), so the message can be cut at a
 * character boundary when it would not fit. */
static __attribute__((cold, noinline)) int fail_dup(struct parser *p, const char *at,
						    const char *key, size_t len)
{
	static const char head[] = "duplicate key \"";
	if (!p->err)
		return -1;
	char *m = p->err->msg;
	size_t cap = sizeof p->err->msg - 5; /* room for `..."` and NUL */
	size_t n = sizeof head - 1;
	memcpy(m, head, n);
	char tmp[16];
	const unsigned char *k = (const unsigned char *)key;
	for (size_t i = 0, adv; i < len; i += adv) {
		adv = keel_utf8_len(k + i, k + len);
		if (!adv)
			adv = 1;
		struct keel_buf esc = {tmp, 0, sizeof tmp};
		keel_buf_add_json_chars(&esc, key + i, adv);
		if (n + esc.len > cap) {
			memcpy(m + n, "...", 3);
			n += 3;
			break;
		}
		memcpy(m + n, esc.data, esc.len);
		n += esc.len;
	}
	m[n++] = '"';
	m[n] = 0;
	p->err->offset = (size_t)(at - p->text);
	return -1;
}

/* ---------------------------------------------------------------- nodes */

static struct keel_json *node_refill(struct parser *p)
{
	p->ncur = keel_arena_alloc(&p->doc->arena, NODE_BLOCK * sizeof(struct keel_json));
	p->nend = p->ncur + NODE_BLOCK;
	return p->ncur++;
}

static inline struct keel_json *node_new(struct parser *p)
{
	if (__builtin_expect(p->ncur == p->nend, 0))
		return node_refill(p);
	return p->ncur++;
}

/* -------------------------------------------------------------- helpers */

static inline bool is_digit(unsigned char c)
{
	return (unsigned char)(c - '0') < 10;
}

/* A byte that cannot follow a complete number. */
static inline bool num_cont(unsigned char c)
{
	return is_digit(c) || c == '.' || c == '+' || c == '-' ||
	       ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

static inline bool is_ws(unsigned char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* Most JSON on Keel's hot path is compact: test one byte, loop rarely. */
static inline const char *skip_ws(const char *s, const char *end)
{
	while (s < end && (unsigned char)*s <= ' ' && is_ws((unsigned char)*s))
		s++;
	return s;
}

/* skip_ws inside the root value: notes whether any blank was skipped, so
 * that compacting a document written without blanks is a plain copy. */
static inline const char *skip_inner_ws(const char *s, const char *end, bool *spaced)
{
	if (__builtin_expect(s < end && (unsigned char)*s > ' ', 1))
		return s;
	const char *t = skip_ws(s, end);
	*spaced |= t != s;
	return t;
}

/* Reads the four hex digits after "\u"; -1 if they are not all hex. */
static long hex4(const char *s)
{
	long v = 0;
	for (int i = 0; i < 4; i++) {
		int h = keel_hex_digit(s[i]);
		if (h < 0)
			return -1;
		v = (v << 4) | h;
	}
	return v;
}

static inline char *put_utf8(char *d, unsigned long cp)
{
	if (cp < 0x80) {
		*d++ = (char)cp;
	} else if (cp < 0x800) {
		*d++ = (char)(0xc0 | (cp >> 6));
		*d++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*d++ = (char)(0xe0 | (cp >> 12));
		*d++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*d++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*d++ = (char)(0xf0 | (cp >> 18));
		*d++ = (char)(0x80 | ((cp >> 12) & 0x3f));
		*d++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*d++ = (char)(0x80 | (cp & 0x3f));
	}
	return d;
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* One high bit per byte of v that ends a plain run inside a string: '"',
 * '\\', a control character or a non-ASCII byte. Borrows can flag bytes
 * above a true hit, never below one, so the lowest flag is exact. */
static inline uint64_t str_stops(uint64_t v)
{
	uint64_t q = v ^ (ONES * '"');
	uint64_t b = v ^ (ONES * '\\');
	uint64_t stops =
	    ((q - ONES) & ~q) | ((b - ONES) & ~b) | ((v - ONES * 0x20) & ~v) | v;
	return stops & HIGHS;
}

static inline bool str_stop_byte(unsigned char c)
{
	return c == '"' || c == '\\' || c < 0x20 || c >= 0x80;
}

/* The byte each one-letter escape stands for (0: not an escape). */
/* clang-format off */
static const char unescape[128] = {
	['"'] = '"', ['\\'] = '\\', ['/'] = '/', ['b'] = '\b',
	['f'] = '\f', ['n'] = '\n', ['r'] = '\r', ['t'] = '\t',
};
/* clang-format on */

/* Decodes the escape at *sp (a backslash) inside the string that opened
 * at q, advancing *sp and *dp past it. */
static int scan_escape(struct parser *p, const char *q, const char **sp, char **dp)
{
	const char *s = *sp;
	const char *end = p->end;
	if (end - s < 2)
		return fail(p, q, "unterminated string");
	unsigned char e = (unsigned char)s[1];
	if (e != 'u') {
		if (e >= 128 || !unescape[e])
			return fail(p, s, "invalid escape");
		*(*dp)++ = unescape[e];
		*sp = s + 2;
		return 0;
	}
	if (end - s < 6) {
		/* Cut short by the end of input, or by a non-hex byte such
		 * as the closing quote: the latter is a bad escape. */
		for (const char *t = s + 2; t < end; t++)
			if (keel_hex_digit(*t) < 0)
				return fail(p, s, "invalid escape");
		return fail(p, q, "unterminated string");
	}
	long cp = hex4(s + 2);
	if (cp < 0)
		return fail(p, s, "invalid escape");
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return fail(p, s, "lone surrogate in \\u escape");
	if (cp >= 0xd800 && cp <= 0xdbff) {
		/* A high surrogate must be followed by an escaped low one. */
		if (end - s < 12 || s[6] != '\\' || s[7] != 'u')
			return fail(p, s, "lone surrogate in \\u escape");
		long lo = hex4(s + 8);
		if (lo < 0)
			return fail(p, s + 6, "invalid escape");
		if (lo < 0xdc00 || lo > 0xdfff)
			return fail(p, s, "lone surrogate in \\u escape");
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		s += 6;
	}
	*dp = put_utf8(*dp, (unsigned long)cp);
	*sp = s + 6;
	return 0;
}

/* Scans the string whose opening quote is at *sp, decoding it to *dp with
 * a NUL after it. On success *sp is past the closing quote and *dp past the
 * NUL. */
static inline __attribute__((always_inline)) int scan_string(struct parser *p,
							     const char **sp, char **dp)
{
	const char *q = *sp;
	const char *s = q + 1;
	const char *end = p->end;
	char *d = *dp;
#if JSON_SSE2
	const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
		      space = _mm_set1_epi8(' ');
#endif
	for (;;) {
#if JSON_SSE2
		/* A signed compare with ' ' flags control characters and,
		 * being negative, every byte >= 0x80 at once. */
		while (end - s >= 16) {
			__m128i v = _mm_loadu_si128((const __m128i *)(const void *)s);
			_mm_storeu_si128((__m128i *)(void *)d, v);
			__m128i stop =
			    _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote),
						      _mm_cmpeq_epi8(v, bslash)),
					 _mm_cmplt_epi8(v, space));
			unsigned m = (unsigned)_mm_movemask_epi8(stop);
			if (m) {
				unsigned i = (unsigned)__builtin_ctz(m);
				s += i;
				d += i;
				goto stop;
			}
			s += 16;
			d += 16;
		}
#endif
#if JSON_SWAR
		while (end - s >= 8) {
			uint64_t v;
			memcpy(&v, s, 8);
			memcpy(d, &v, 8);
			uint64_t m = str_stops(v);
			if (m) {
				unsigned i = (unsigned)__builtin_ctzll(m) >> 3;
				s += i;
				d += i;
				goto stop;
			}
			s += 8;
			d += 8;
		}
#endif
		while (s < end && !str_stop_byte((unsigned char)*s))
			*d++ = *s++;
		if (s == end)
			return fail(p, q, "unterminated string");
#if JSON_SWAR || JSON_SSE2
	stop:;
#endif
		unsigned char c = (unsigned char)*s;
		if (c == '"') {
			*d++ = 0;
			*sp = s + 1;
			*dp = d;
			return 0;
		}
		if (c == '\\') {
			if (scan_escape(p, q, &s, &d))
				return -1;
			continue;
		}
		if (c < 0x20)
			return fail(p, s, "control character in string");
		size_t n = keel_utf8_len((const unsigned char *)s, (const unsigned char *)end);
		if (!n)
			return fail(p, s, "invalid UTF-8");
		for (size_t i = 0; i < n; i++)
			*d++ = *s++;
	}
}

/* ------------------------------------------------------- duplicate keys */

static inline uint64_t mix64(uint64_t a, uint64_t b)
{
	json_u128 r = (json_u128)a * b;
	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static uint64_t key_hash(const char *k, size_t n, uint64_t seed)
{
	uint64_t h = mix64(seed ^ n, 0x9e3779b97f4a7c15ULL);
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, k, 8);
		h = mix64(h ^ w, seed ^ 0xa0761d6478bd642fULL);
		k += 8;
		n -= 8;
	}
	uint64_t w = 0;
	memcpy(&w, k, n);
	return mix64(h ^ w ^ 0xe7037ed1a0b428dbULL, seed ^ 0x8ebc6af09c88c6e3ULL);
}

static void keytab_grow(struct keytab *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 64;
	struct keyslot *ns = keel_xcalloc(ncap, sizeof *ns);
	for (size_t i = 0; i < t->cap; i++) {
		struct keyslot *o = &t->slots[i];
		if (o->gen != t->gen)
			continue;
		size_t j = o->hash & (ncap - 1);
		while (ns[j].gen == t->gen)
			j = (j + 1) & (ncap - 1);
		ns[j] = *o;
	}
	free(t->slots);
	t->slots = ns;
	t->cap = ncap;
}

/* Adds a key to the table; returns false if it was already there. */
static bool keytab_add(struct keytab *t, uint64_t seed, const char *key, size_t len)
{
	if ((t->count + 1) * 2 > t->cap)
		keytab_grow(t);
	uint32_t h = (uint32_t)(key_hash(key, len, seed) >> 32);
	size_t mask = t->cap - 1;
	size_t i = h & mask;
	while (t->slots[i].gen == t->gen) {
		struct keyslot *s = &t->slots[i];
		if (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0)
			return false;
		i = (i + 1) & mask;
	}
	t->slots[i] = (struct keyslot){key, len, t->gen, h};
	t->count++;
	return true;
}

/* Starts hashing the object of frame f (at nesting level lvl): a fresh
 * generation of the level's table, filled with the members so far. */
static void keytab_start(struct parser *p, struct frame *f, size_t lvl)
{
	struct json_scratch *sc = scratch_get(p->doc);
	struct keytab *t = &sc->tabs[lvl];
	if (++t->gen == 0) {
		if (t->slots)
			memset(t->slots, 0, t->cap * sizeof *t->slots);
		t->gen = 1;
	}
	t->count = 0;
	for (const struct keel_json *m = f->node->child; m; m = m->next)
		keytab_add(t, sc->seed, m->key, m->key_len);
	f->hashed = true;
}

/* Equality of two keys of this parse. Keys live in the string area, which
 * has 16 bytes of slack past the last one, so short keys (most of them)
 * compare as one 8-byte word instead of a call to memcmp. */
static inline bool key_eq(const char *a, const char *b, size_t len)
{
#if JSON_SWAR
	if (len <= 8) {
		uint64_t x, y;
		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		uint64_t mask = len == 8 ? ~0ULL : (1ULL << (len * 8)) - 1;
		return ((x ^ y) & mask) == 0;
	}
#endif
	return memcmp(a, b, len) == 0;
}

/* Checks the key about to be added to the object of frame f. */
static inline bool key_is_new(struct parser *p, struct frame *f, size_t lvl,
			      const char *key, size_t len)
{
	if (__builtin_expect(!f->hashed, 1)) {
		if (f->count < DUP_LINEAR) {
			/* Most keys are new and most objects small: one bit
			 * from a hash of the first 8 bytes and the length
			 * spares the compare loop unless the bit is taken. */
			uint64_t w = 0;
#if JSON_SWAR
			memcpy(&w, key, 8); /* the string area has slack */
			if (len < 8)
				w &= (1ULL << (len * 8)) - 1;
#else
			for (size_t i = 0; i < len && i < 8; i++)
				w = (w << 8) | (unsigned char)key[i];
#endif
			uint64_t bit = 1ULL
				       << (((w + len) * 0x9e3779b97f4a7c15ULL) >> 58);
			uint64_t seen = f->seen;
			f->seen = seen | bit;
			if (!(seen & bit))
				return true;
			for (const struct keel_json *m = f->node->child; m; m = m->next)
				if (m->key_len == len && key_eq(m->key, key, len))
					return false;
			return true;
		}
		keytab_start(p, f, lvl);
	}
	struct json_scratch *sc = p->doc->scratch;
	return keytab_add(&sc->tabs[lvl], sc->seed, key, len);
}

/* ---------------------------------------------------------------- parse */

int keel_json_parse(struct keel_json_doc *doc, const char *text, size_t len,
		    struct keel_json_error *err)
{
	struct frame st[KEEL_JSON_MAX_DEPTH];
	struct parser p;
	size_t depth = 0;
	const char *s = text;
	const char *end;
	const char *key = NULL;
	size_t key_len = 0;
	struct keel_json *root = NULL;
	struct keel_json *v;
	struct frame *f = st; /* the innermost open container, while depth > 0 */

	if (!text)
		text = s = ""; /* (NULL, 0): no arithmetic on a null pointer */
	end = text + len;
	keel_arena_reset(&doc->arena);
	doc->root = NULL;
	doc->text = text;
	doc->text_len = len;
	p.doc = doc;
	p.text = text;
	p.end = end;
	p.err = err;
	p.ncur = p.nend = NULL;
	char *d = keel_arena_alloc(&doc->arena, len + 16);
	bool spaced = false;
	s = skip_ws(s, end); /* before the root: not part of it */

value:
	s = skip_inner_ws(s, end, &spaced);
	if (s == end)
		return fail(&p, s, "unexpected end of input");
value_here: /* s < end is at the value's first byte, not a blank */
	v = node_new(&p);
	v->key = key;
	v->key_len = key_len;
	v->child = NULL;
	v->next = NULL;
	v->raw_off = (size_t)(s - text);
	key = NULL;
	key_len = 0;
	if (depth) {
		/* f is the innermost open container's frame */
		*f->tail = v;
		f->tail = &v->next;
		f->count++;
	} else {
		root = v;
	}
	/* Strings first, outside the switch: most values are strings, and
	 * the switch's compare tree reaches '"' only after several tests. */
	if (*s == '"') {
		const char *q = s;
		v->type = KEEL_JSON_STRING;
		v->str = d;
		if (scan_string(&p, &s, &d))
			return -1;
		v->len = (size_t)(d - v->str) - 1;
		v->raw_len = (size_t)(s - q);
		goto after;
	}
	switch (*s) {
	case '-':
	case '0':
	case '1':
	case '2':
	case '3':
	case '4':
	case '5':
	case '6':
	case '7':
	case '8':
	case '9': {
		const char *n0 = s;
		v->type = KEEL_JSON_NUMBER;
		v->str = d;
		if (*s == '-')
			*d++ = *s++;
		if (s == end)
			return fail(&p, n0, "invalid number");
		if (*s == '0') {
			*d++ = *s++;
		} else if (is_digit((unsigned char)*s)) {
			do
				*d++ = *s++;
			while (s < end && is_digit((unsigned char)*s));
		} else {
			return fail(&p, n0, "invalid number");
		}
		if (s < end && *s == '.') {
			*d++ = *s++;
			if (s == end || !is_digit((unsigned char)*s))
				return fail(&p, n0, "invalid number");
			do
				*d++ = *s++;
			while (s < end && is_digit((unsigned char)*s));
		}
		if (s < end && (*s == 'e' || *s == 'E')) {
			*d++ = *s++;
			if (s < end && (*s == '+' || *s == '-'))
				*d++ = *s++;
			if (s == end || !is_digit((unsigned char)*s))
				return fail(&p, n0, "invalid number");
			do
				*d++ = *s++;
			while (s < end && is_digit((unsigned char)*s));
		}
		/* "01", "1.2.3", "2-1", "0x10", "1e5e": the number goes on
		 * past what the grammar allows. */
		if (s < end && num_cont((unsigned char)*s))
			return fail(&p, n0, "invalid number");
		*d++ = 0;
		v->len = v->raw_len = (size_t)(s - n0);
		break;
	}
	case 't':
		if (end - s < 4 || memcmp(s, "true", 4) != 0)
			return fail(&p, s, "invalid literal");
		v->type = KEEL_JSON_TRUE;
		v->str = NULL;
		v->len = 0;
		v->raw_len = 4;
		s += 4;
		break;
	case 'f':
		if (end - s < 5 || memcmp(s, "false", 5) != 0)
			return fail(&p, s, "invalid literal");
		v->type = KEEL_JSON_FALSE;
		v->str = NULL;
		v->len = 0;
		v->raw_len = 5;
		s += 5;
		break;
	case 'n':
		if (end - s < 4 || memcmp(s, "null", 4) != 0)
			return fail(&p, s, "invalid literal");
		v->type = KEEL_JSON_NULL;
		v->str = NULL;
		v->len = 0;
		v->raw_len = 4;
		s += 4;
		break;
	case '{':
	case '[':
		if (depth == KEEL_JSON_MAX_DEPTH)
			return fail(&p, s, "nesting deeper than 64");
		v->str = NULL;
		v->len = 0;
		f = &st[depth++];
		f->node = v;
		f->tail = &v->child;
		f->count = 0;
		f->hashed = false;
		f->seen = 0;
		f->is_object = *s == '{';
		v->type = f->is_object ? KEEL_JSON_OBJECT : KEEL_JSON_ARRAY;
		s = skip_inner_ws(s + 1, end, &spaced);
		if (s == end)
			return fail(&p, s, "unexpected end of input");
		if (*s == (f->is_object ? '}' : ']'))
			goto close;
		if (f->is_object)
			goto key;
		goto value;
	case ']':
		/* An empty array closes at its '[': here a ',' came first. */
		if (depth && !st[depth - 1].is_object)
			return fail(&p, s, "trailing comma");
		return fail(&p, s, "expected a value");
	default:
		return fail(&p, s, "expected a value");
	}

after:
	if (!depth)
		goto done;
	/* Written without blanks (the usual case), a ',' is followed by the
	 * next member: straight there, past the checks below that would all
	 * pass. */
	if (end - s >= 2 && s[0] == ',' && (unsigned char)s[1] > ' ') {
		s++;
		if (f->is_object)
			goto key;
		goto value_here;
	}
	s = skip_inner_ws(s, end, &spaced);
	if (s == end)
		return fail(&p, s, "unexpected end of input");
	if (*s == ',') {
		s = skip_inner_ws(s + 1, end, &spaced);
		if (s == end)
			return fail(&p, s, "unexpected end of input");
		if (f->is_object)
			goto key;
		goto value;
	}
	if (*s == (f->is_object ? '}' : ']'))
		goto close;
	return fail(&p, s, f->is_object ? "expected ',' or '}'" : "expected ',' or ']'");

close:
	f->node->len = f->count;
	f->node->raw_len = (size_t)(s + 1 - text) - f->node->raw_off;
	depth--;
	if (depth)
		f = &st[depth - 1];
	s++;
	goto after;

key:
	/* s is at a non-blank byte inside the object of frame f. */
	if (*s != '"') {
		/* An empty object closes at its '{': here a ',' came first. */
		if (*s == '}')
			return fail(&p, s, "trailing comma");
		return fail(&p, s, "expected a string key");
	}
	{
		const char *kq = s;
		key = d;
		if (scan_string(&p, &s, &d))
			return -1;
		key_len = (size_t)(d - key) - 1;
		if (!key_is_new(&p, f, depth - 1, key, key_len))
			return fail_dup(&p, kq, key, key_len);
	}
	/* The same for a ':' and the value right after it. */
	if (end - s >= 2 && s[0] == ':' && (unsigned char)s[1] > ' ') {
		s++;
		goto value_here;
	}
	s = skip_inner_ws(s, end, &spaced);
	if (s == end)
		return fail(&p, s, "unexpected end of input");
	if (*s != ':')
		return fail(&p, s, "expected ':'");
	s++;
	goto value;

done:
	s = skip_ws(s, end);
	if (s != end)
		return fail(&p, s, "trailing characters after the value");
	doc->root = root;
	doc->compact = !spaced;
	return 0;
}

/* -------------------------------------------------------------- lookups */

const struct keel_json *keel_json_get(const struct keel_json *obj, const char *key,
				      size_t key_len)
{
	if (!obj || obj->type != KEEL_JSON_OBJECT)
		return NULL;
	/* The first byte settles most mismatches without a call (a key is
	 * NUL-terminated, so key[0] is readable even when empty). */
	char k0 = key_len ? key[0] : 0;
	for (const struct keel_json *m = obj->child; m; m = m->next)
		if (m->key_len == key_len && m->key[0] == k0 &&
		    memcmp(m->key, key, key_len) == 0)
			return m;
	return NULL;
}

/* Does the pointer token t (with ~0 and ~1 escapes, already checked) name
 * the key k? */
static bool token_eq(const char *t, size_t tn, const char *k, size_t kn)
{
	size_t i = 0, j = 0;
	while (i < tn && j < kn) {
		char c = t[i++];
		if (c == '~')
			c = t[i++] == '0' ? '~' : '/';
		if (c != k[j++])
			return false;
	}
	return i == tn && j == kn;
}

static const struct keel_json *pointer_member(const struct keel_json *obj, const char *t,
					      size_t tn)
{
	bool escaped = false;
	for (size_t i = 0; i < tn; i++) {
		if (t[i] != '~')
			continue;
		if (i + 1 == tn || (t[i + 1] != '0' && t[i + 1] != '1'))
			return NULL; /* not a valid RFC 6901 token */
		escaped = true;
		i++;
	}
	if (!escaped)
		return keel_json_get(obj, t, tn);
	for (const struct keel_json *m = obj->child; m; m = m->next)
		if (token_eq(t, tn, m->key, m->key_len))
			return m;
	return NULL;
}

static const struct keel_json *pointer_index(const struct keel_json *arr, const char *t,
					     size_t tn)
{
	if (tn == 0 || (tn > 1 && t[0] == '0'))
		return NULL;
	size_t idx = 0;
	for (size_t i = 0; i < tn; i++) {
		if (!is_digit((unsigned char)t[i]))
			return NULL; /* includes "-", the element past the end */
		if (idx > (SIZE_MAX - 9) / 10)
			return NULL;
		idx = idx * 10 + (size_t)(t[i] - '0');
	}
	if (idx >= arr->len)
		return NULL;
	const struct keel_json *m = arr->child;
	while (idx--)
		m = m->next;
	return m;
}

const struct keel_json *keel_json_pointer(const struct keel_json *root, const char *ptr,
					  size_t ptr_len)
{
	const struct keel_json *v = root;
	size_t i = 0;
	while (v && i < ptr_len) {
		if (ptr[i] != '/')
			return NULL;
		size_t t0 = ++i;
		while (i < ptr_len && ptr[i] != '/')
			i++;
		if (v->type == KEEL_JSON_OBJECT)
			v = pointer_member(v, ptr + t0, i - t0);
		else if (v->type == KEEL_JSON_ARRAY)
			v = pointer_index(v, ptr + t0, i - t0);
		else
			return NULL;
	}
	return v;
}

/* ----------------------------------------------------------- compaction */

void keel_json_compact_text(const char *text, size_t len, struct keel_buf *out)
{
	if (!text)
		text = "";
	keel_buf_reserve(out, len);
	char *o = out->data + out->len;
	const char *s = text;
	const char *end = text + len;
	/* o never gets ahead of s, so the 8-byte stores below stay inside the
	 * len bytes reserved. */
	while (s < end) {
		char c = *s++;
		if (c != '"') {
			if (!is_ws((unsigned char)c))
				*o++ = c;
			continue;
		}
		*o++ = c;
		for (;;) {
#if JSON_SWAR
			while (end - s >= 8) {
				uint64_t w;
				memcpy(&w, s, 8);
				memcpy(o, &w, 8);
				uint64_t q = w ^ (ONES * '"');
				uint64_t b = w ^ (ONES * '\\');
				uint64_t m =
				    (((q - ONES) & ~q) | ((b - ONES) & ~b)) & HIGHS;
				if (m) {
					unsigned i = (unsigned)__builtin_ctzll(m) >> 3;
					s += i;
					o += i;
					break;
				}
				s += 8;
				o += 8;
			}
#endif
			if (s == end)
				break;
			c = *s++;
			*o++ = c;
			if (c == '"')
				break;
			if (c == '\\' && s < end)
				*o++ = *s++;
		}
	}
	out->len = (size_t)(o - out->data);
	out->data[out->len] = 0;
}

void keel_json_compact(const struct keel_json_doc *doc, const struct keel_json *v,
		       struct keel_buf *out)
{
	if (doc->compact)
		keel_buf_add(out, doc->text + v->raw_off, v->raw_len);
	else
		keel_json_compact_text(doc->text + v->raw_off, v->raw_len, out);
}

int keel_json_write_string(FILE *f, const char *s, size_t len)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_add_json_str(&b, keel_str_make(s ? s : "", s ? len : 0));
	int rc = fwrite(b.data, 1, b.len, f) == b.len ? 0 : KEEL_EIO;
	keel_buf_free(&b);
	return rc;
}

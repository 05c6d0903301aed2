/*
 * auth.c - bearer tokens for the HTTP server: the token file (one token
 * hash a line with the tenants it may touch), the constant-time lookup of a
 * presented token, and the making of new tokens for `keel token new`.
 *
 * Only hashes are kept, on disk and in memory: a leaked token file or core
 * dump gives nobody a token. Tokens are 256 random bits, so a plain SHA-256
 * (no salt, no stretching) is enough: there is nothing to guess.
 */
#include "http.h"

#include "keel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define TOKEN_PREFIX "keel_"
#define HASH_PREFIX "sha256:"

bool keel_tenant_name_ok(const char *s, size_t len)
{
	if (len < 1 || len > 64)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
		if (!ok)
			return false;
	}
	return true;
}

static void entry_free(struct keel_token_entry *e)
{
	for (size_t i = 0; i < e->ntenants; i++)
		free(e->tenants[i]);
	free(e->tenants);
	memset(e, 0, sizeof *e);
}

void keel_tokens_free(struct keel_tokens *t)
{
	for (size_t i = 0; i < t->n; i++)
		entry_free(&t->v[i]);
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* Parses one line (without its newline) into e. Returns 0, 1 for a line
 * with nothing on it, or -1 with the rule broken in err. */
static int parse_line(const char *p, const char *end, struct keel_token_entry *e,
		      struct keel_buf *err)
{
	while (p < end && is_blank(*p))
		p++;
	if (p == end || *p == '#')
		return 1;
	size_t plen = strlen(HASH_PREFIX);
	if ((size_t)(end - p) < plen || memcmp(p, HASH_PREFIX, plen) != 0) {
		keel_buf_adds(err, "expected \"sha256:<64 hex digits>\"");
		return -1;
	}
	p += plen;
	for (size_t i = 0; i < KEEL_SHA256_LEN; i++) {
		int hi = p + 2 * i + 1 < end ? keel_hex_digit(p[2 * i]) : -1;
		int lo = hi >= 0 ? keel_hex_digit(p[2 * i + 1]) : -1;
		if (hi < 0 || lo < 0) {
			keel_buf_adds(err, "hash: not 64 hex digits");
			return -1;
		}
		e->hash[i] = (uint8_t)(hi << 4 | lo);
	}
	p += 2 * KEEL_SHA256_LEN;
	if (p == end || !is_blank(*p)) {
		keel_buf_adds(err, p == end ? "missing scope (\"*\" or tenant names)"
					    : "hash: not 64 hex digits");
		return -1;
	}
	while (p < end && is_blank(*p))
		p++;
	const char *scope = p;
	while (p < end && !is_blank(*p) && *p != '#')
		p++;
	const char *scope_end = p;
	while (p < end && is_blank(*p))
		p++;
	/* Rights after the scope: "forget" is the only one (docs/http.md). */
	if (p < end && *p != '#') {
		const char *right = p;
		while (p < end && !is_blank(*p) && *p != '#')
			p++;
		if (p - right != 6 || memcmp(right, "forget", 6) != 0) {
			keel_buf_addf(err, "unknown right \"%.*s\" after the scope "
					   "(the one right is \"forget\")",
				      (int)(p - right), right);
			return -1;
		}
		e->forget = true;
		while (p < end && is_blank(*p))
			p++;
	}
	if (p < end && *p != '#') {
		keel_buf_adds(err, "unexpected text after the right");
		return -1;
	}
	if (scope == scope_end) {
		keel_buf_adds(err, "missing scope (\"*\" or tenant names)");
		return -1;
	}
	if (scope_end - scope == 1 && *scope == '*') {
		e->all = true;
		return 0;
	}
	for (const char *t = scope; t <= scope_end;) {
		const char *comma = memchr(t, ',', (size_t)(scope_end - t));
		const char *te = comma ? comma : scope_end;
		if (!keel_tenant_name_ok(t, (size_t)(te - t))) {
			keel_buf_addf(err, "tenant \"%.*s\": not 1-64 bytes of [A-Za-z0-9._-]",
				      (int)(te - t), t);
			return -1;
		}
		e->tenants = keel_xrealloc(e->tenants, (e->ntenants + 1) * sizeof *e->tenants);
		e->tenants[e->ntenants++] = keel_xstrndup(t, (size_t)(te - t));
		t = te + 1;
	}
	return 0;
}

int keel_tokens_parse(const char *text, size_t len, struct keel_tokens *out,
		      struct keel_buf *err)
{
	out->v = NULL;
	out->n = 0;
	const char *p = text, *end = text + len;
	unsigned lineno = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		lineno++;
		struct keel_token_entry e = {0};
		e.line = lineno;
		size_t mark = err->len;
		int rc = parse_line(p, le, &e, err);
		if (rc < 0) {
			/* Put the position first, as every Keel message does. */
			char *rule = keel_xstrdup(err->data + mark);
			err->len = mark;
			keel_buf_addf(err, "line %u: %s", lineno, rule);
			free(rule);
			entry_free(&e);
			keel_tokens_free(out);
			return KEEL_EINVAL;
		}
		if (rc == 0) {
			for (size_t i = 0; i < out->n; i++) {
				if (memcmp(out->v[i].hash, e.hash, KEEL_SHA256_LEN) == 0) {
					keel_buf_addf(err, "line %u: hash already given on line %u",
						      lineno, out->v[i].line);
					entry_free(&e);
					keel_tokens_free(out);
					return KEEL_EINVAL;
				}
			}
			out->v = keel_xrealloc(out->v, (out->n + 1) * sizeof *out->v);
			out->v[out->n++] = e;
		}
		p = nl ? nl + 1 : end;
	}
	if (out->n == 0) {
		keel_buf_adds(err, "no tokens in the token file");
		return KEEL_EINVAL;
	}
	return 0;
}

int keel_tokens_load(const char *path, struct keel_tokens *out, struct keel_buf *err)
{
	out->v = NULL;
	out->n = 0;
	FILE *f = fopen(path, "rb");
	if (!f) {
		keel_buf_addf(err, "token file \"%s\": %s", path, strerror(errno));
		return KEEL_EIO;
	}
	struct keel_buf text;
	keel_buf_init(&text);
	char chunk[4096];
	size_t got;
	while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
		keel_buf_add(&text, chunk, got);
		if (text.len > (64u << 20)) {
			keel_buf_addf(err, "token file \"%s\": larger than 64 MiB", path);
			keel_buf_free(&text);
			fclose(f);
			return KEEL_EINVAL;
		}
	}
	bool failed = ferror(f) != 0;
	fclose(f);
	if (failed) {
		keel_buf_addf(err, "token file \"%s\": read error", path);
		keel_buf_free(&text);
		return KEEL_EIO;
	}
	size_t mark = err->len;
	int rc = keel_tokens_parse(text.data ? text.data : "", text.len, out, err);
	if (rc < 0) {
		char *msg = keel_xstrdup(err->data + mark);
		err->len = mark;
		keel_buf_addf(err, "token file \"%s\": %s", path, msg);
		free(msg);
	}
	keel_buf_free(&text);
	return rc;
}

const struct keel_token_entry *keel_tokens_find(const struct keel_tokens *t,
						const char *token, size_t len)
{
	uint8_t h[KEEL_SHA256_LEN];
	keel_sha256(token, len, h);
	const struct keel_token_entry *found = NULL;
	for (size_t i = 0; i < t->n; i++) {
		/* No break: every entry costs the same, match or not. */
		bool eq = keel_ct_equal(h, t->v[i].hash, KEEL_SHA256_LEN);
		if (eq)
			found = &t->v[i];
	}
	memset(h, 0, sizeof h);
	return found;
}

bool keel_token_allows(const struct keel_token_entry *e, const char *tenant,
		       size_t len)
{
	if (e->all)
		return true;
	for (size_t i = 0; i < e->ntenants; i++)
		if (strlen(e->tenants[i]) == len && memcmp(e->tenants[i], tenant, len) == 0)
			return true;
	return false;
}

static void hex(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = 0;
}

int keel_token_hash(const char *token, size_t len, char hash[KEEL_TOKEN_BUFSZ])
{
	uint8_t h[KEEL_SHA256_LEN];
	keel_sha256(token, len, h);
	size_t plen = strlen(HASH_PREFIX);
	memcpy(hash, HASH_PREFIX, plen);
	hex(h, sizeof h, hash + plen);
	return 0;
}

int keel_token_new(char token[KEEL_TOKEN_BUFSZ], char hash[KEEL_TOKEN_BUFSZ])
{
	uint8_t r[32];
	size_t got = 0;
	while (got < sizeof r) {
		ssize_t n = getrandom(r + got, sizeof r - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return KEEL_EIO;
		}
		got += (size_t)n;
	}
	size_t plen = strlen(TOKEN_PREFIX);
	memcpy(token, TOKEN_PREFIX, plen);
	hex(r, sizeof r, token + plen);
	memset(r, 0, sizeof r);
	return keel_token_hash(token, strlen(token), hash);
}

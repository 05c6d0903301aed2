/*
 * binary_mode.c - a CloudEvent in binary content mode (the HTTP binding's,
 * docs/http.md "Binary content mode"; the NATS binding's, docs/log.md)
 * turned into the structured JSON envelope Keel logs: each `ce-NAME` header is the attribute NAME (header
 * names in any case; values unquoted, then percent-decoded, and UTF-8),
 * Content-Type is datacontenttype, and the body is the data: as JSON under
 * "data" when the Content-Type says JSON, else base64 under "data_base64".
 *
 * The envelope's members are written in the byte order of their names,
 * data last, whatever order the headers came in: the same event sent again
 * by another client is then the same envelope, a duplicate rather than a
 * conflicting one. Sorting also finds a header given twice (neighbours)
 * without a table; everything here is O(n log n) in the headers.
 */
#include "binary_mode.h"

#include "json_write.h"

#include <stdlib.h>
#include <strings.h>

#include "json.h"
#include "utf8.h"

/* What Keel needs of every binary-mode event: CloudEvents' four required
 * attributes, and Keel's own time and tenant. */
static const char *const required[] = {"specversion", "id",   "source",
				       "type",	      "time", "tenant"};

void keel_ce_binary_init(struct keel_ce_binary *b)
{
	memset(b, 0, sizeof *b);
	keel_buf_init(&b->json);
	keel_buf_init(&b->tenant);
	keel_buf_init(&b->err);
	keel_buf_init(&b->text);
}

void keel_ce_binary_free(struct keel_ce_binary *b)
{
	keel_buf_free(&b->json);
	keel_buf_free(&b->tenant);
	keel_buf_free(&b->err);
	keel_buf_free(&b->text);
	free(b->attrs);
	memset(b, 0, sizeof *b);
}

static bool fail(struct keel_ce_binary *b, const char *name, size_t len, const char *why)
{
	keel_buf_adds(&b->err, "header \"");
	keel_buf_add(&b->err, name, len > 64 ? 64 : len);
	if (len > 64)
		keel_buf_adds(&b->err, "...");
	keel_buf_addf(&b->err, "\": %s", why);
	return false;
}

/* Decodes a header value into b->text: a quoted string is unquoted first
 * (RFC 9110 quoted-string, backslash escapes), then one round of
 * percent-decoding; the result must be UTF-8 without control characters,
 * which CloudEvents attribute values never contain. */
static const char *decode_value(struct keel_ce_binary *b, const char *v, size_t n)
{
	while (n && (*v == ' ' || *v == '\t'))
		v++, n--;
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	struct keel_buf unq;
	keel_buf_init(&unq);
	if (n && *v == '"') {
		size_t i = 1;
		for (; i < n && v[i] != '"'; i++) {
			if (v[i] == '\\' && i + 1 < n)
				i++;
			keel_buf_addc(&unq, v[i]);
		}
		if (i + 1 != n) {
			keel_buf_free(&unq);
			return i >= n ? "unterminated quoted string"
				      : "characters after a quoted string";
		}
		v = unq.data ? unq.data : "";
		n = unq.len;
	}
	size_t start = b->text.len;
	const char *why = NULL;
	for (size_t i = 0; i < n && !why; i++) {
		if (v[i] != '%') {
			keel_buf_addc(&b->text, v[i]);
			continue;
		}
		int hi = i + 2 < n ? keel_hex_digit(v[i + 1]) : -1;
		int lo = i + 2 < n ? keel_hex_digit(v[i + 2]) : -1;
		if (hi < 0 || lo < 0) {
			why = "'%' not followed by two hexadecimal digits";
			break;
		}
		keel_buf_addc(&b->text, (char)(hi << 4 | lo));
		i += 2;
	}
	keel_buf_free(&unq);
	if (why)
		return why;
	const char *s = b->text.data + start;
	size_t len = b->text.len - start;
	if (!keel_utf8_valid(s, len))
		return "not UTF-8 once percent-decoded";
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		/* C0 controls, DEL, and C1 controls (U+0080-U+009F). */
		if (c < 0x20 || c == 0x7f ||
		    (c == 0xc2 && i + 1 < len && (unsigned char)s[i + 1] <= 0x9f))
			return "control character";
	}
	return NULL;
}

bool keel_ce_binary_header(struct keel_ce_binary *b, const char *name, const char *value)
{
	if (strncasecmp(name, "ce-", 3) != 0)
		return true;
	size_t len = strlen(name);
	b->any = true;
	/* Attribute names are lowercase letters and digits; header names
	 * are case-insensitive, so the header's are lowered. */
	size_t name_off = b->text.len;
	for (size_t i = 3; i < len; i++) {
		char c = name[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
			return fail(b, name, len,
				    "not a CloudEvents attribute (names are letters and "
				    "digits)");
		keel_buf_addc(&b->text, c);
	}
	size_t name_len = len - 3;
	if (name_len == 0)
		return fail(b, name, len, "no attribute name after \"ce-\"");
	const char *lowered = b->text.data + name_off;
	if (name_len == 15 && memcmp(lowered, "datacontenttype", 15) == 0)
		return fail(b, name, len,
			    "not allowed in binary content mode: the Content-Type header "
			    "is the datacontenttype");
	if (name_len == 4 && memcmp(lowered, "data", 4) == 0)
		return fail(b, name, len, "\"data\" is the body, not an attribute");
	size_t value_off = b->text.len;
	const char *why = decode_value(b, value ? value : "", value ? strlen(value) : 0);
	if (why)
		return fail(b, name, len, why);
	if (b->nattrs == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 16;
		b->attrs = keel_xrealloc(b->attrs, b->cap * sizeof *b->attrs);
	}
	/* Offsets for now: b->text may still move. */
	b->attrs[b->nattrs++] = (struct keel_ce_attr){
	    {(const char *)(uintptr_t)name_off, name_len},
	    {(const char *)(uintptr_t)value_off, b->text.len - value_off}};
	return true;
}

static int attr_cmp(const void *x, const void *y)
{
	const struct keel_ce_attr *a = x, *b = y;
	return keel_str_cmp(a->name, b->name);
}

static const struct keel_ce_attr *find(const struct keel_ce_binary *b, const char *name)
{
	struct keel_ce_attr key = {keel_str_cstr(name), KEEL_STR_NULL};
	if (b->nattrs == 0)
		return NULL; /* bsearch must not be given NULL */
	return bsearch(&key, b->attrs, b->nattrs, sizeof *b->attrs, attr_cmp);
}

bool keel_ce_binary_attributes(struct keel_ce_binary *b, const char *content_type)
{
	/* datacontenttype is the Content-Type as sent (not percent-encoded:
	 * an ordinary header), and takes its place among the others. */
	if (content_type) {
		struct keel_str ct = keel_str_cstr(content_type);
		while (ct.len && (ct.ptr[ct.len - 1] == ' ' || ct.ptr[ct.len - 1] == '\t'))
			ct.len--;
		if (!keel_utf8_valid(ct.ptr, ct.len))
			return fail(b, "Content-Type", 12, "not UTF-8");
		keel_buf_adds(&b->text, "datacontenttype");
		size_t off = b->text.len - 15;
		keel_buf_add(&b->text, ct.ptr, ct.len);
		if (b->nattrs == b->cap) {
			b->cap = b->cap ? b->cap * 2 : 16;
			b->attrs = keel_xrealloc(b->attrs, b->cap * sizeof *b->attrs);
		}
		b->attrs[b->nattrs++] = (struct keel_ce_attr){
		    {(const char *)(uintptr_t)off, 15},
		    {(const char *)(uintptr_t)(off + 15), ct.len}};
	}
	for (size_t i = 0; i < b->nattrs; i++) {
		struct keel_ce_attr *a = &b->attrs[i];
		a->name.ptr = b->text.data + (uintptr_t)a->name.ptr;
		a->value.ptr = b->text.data + (uintptr_t)a->value.ptr;
	}
	if (b->nattrs > 1)
		qsort(b->attrs, b->nattrs, sizeof *b->attrs, attr_cmp);
	for (size_t i = 1; i < b->nattrs; i++) {
		if (keel_str_eq(b->attrs[i].name, b->attrs[i - 1].name)) {
			keel_buf_adds(&b->err, "header \"ce-");
			keel_buf_add(&b->err, b->attrs[i].name.ptr,
				     b->attrs[i].name.len > 64 ? 64 : b->attrs[i].name.len);
			keel_buf_adds(&b->err, "\": given more than once");
			return false;
		}
	}
	for (size_t i = 0; i < KEEL_ARRAY_LEN(required); i++) {
		if (!find(b, required[i])) {
			keel_buf_addf(&b->err,
				      "header \"ce-%s\": missing (binary content mode needs "
				      "ce-specversion, ce-id, ce-source, ce-type, ce-time and "
				      "ce-tenant)",
				      required[i]);
			return false;
		}
	}
	const struct keel_ce_attr *t = find(b, "tenant");
	if (t) /* it is, being required: said for the compiler */
		keel_buf_add(&b->tenant, t->value.ptr, t->value.len);
	keel_buf_addc(&b->json, '{');
	for (size_t i = 0; i < b->nattrs; i++) {
		if (i)
			keel_buf_addc(&b->json, ',');
		keel_buf_add_json_str(&b->json, b->attrs[i].name);
		keel_buf_addc(&b->json, ':');
		keel_buf_add_json_str(&b->json, b->attrs[i].value);
	}
	return true;
}

/* RFC 4648 base64, padded. */
static void add_base64(struct keel_buf *out, const unsigned char *p, size_t n)
{
	static const char abc[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	keel_buf_reserve(out, (n + 2) / 3 * 4);
	size_t i = 0;
	for (; i + 3 <= n; i += 3) {
		uint32_t w = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		char q[4] = {abc[w >> 18], abc[(w >> 12) & 63], abc[(w >> 6) & 63],
			     abc[w & 63]};
		keel_buf_add(out, q, 4);
	}
	if (i < n) {
		uint32_t w = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
		char q[4] = {abc[w >> 18], abc[(w >> 12) & 63],
			     i + 1 < n ? abc[(w >> 6) & 63] : '=', '='};
		keel_buf_add(out, q, 4);
	}
}

bool keel_ce_binary_data(struct keel_ce_binary *b, const char *body, size_t len, bool json)
{
	if (len == 0) {
		/* No data at all (the envelope rules then reject the event:
		 * Keel's events carry data). */
	} else if (json) {
		struct keel_json_doc doc;
		keel_json_doc_init(&doc);
		struct keel_json_error jerr;
		int rc = keel_json_parse(&doc, body, len, &jerr);
		if (rc != 0)
			keel_buf_addf(&b->err,
				      "body: invalid JSON at byte %zu: %s (the Content-Type "
				      "declares JSON data)",
				      jerr.offset, jerr.msg);
		keel_json_doc_free(&doc);
		if (rc != 0)
			return false;
		keel_buf_adds(&b->json, ",\"data\":");
		keel_buf_add(&b->json, body, len);
	} else {
		keel_buf_adds(&b->json, ",\"data_base64\":\"");
		add_base64(&b->json, (const unsigned char *)body, len);
		keel_buf_addc(&b->json, '"');
	}
	keel_buf_addc(&b->json, '}');
	return true;
}

/*
 * media_type.c - reading a Content-Type header (RFC 9110 section 8.3):
 * the media type and the one parameter Keel acts on, charset. POST
 * /v1/events picks its content mode from the media type
 * (docs/http.md, "POST /v1/events").
 */
#include "media_type.h"

#include <strings.h>

static bool is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* RFC 9110 tchar: what a type, subtype or parameter name is made of. */
static bool is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static size_t token_len(const char *s)
{
	size_t n = 0;
	while (is_tchar((unsigned char)s[n]))
		n++;
	return n;
}

bool keel_media_type_parse(const char *s, struct keel_media_type *mt)
{
	*mt = (struct keel_media_type){KEEL_STR_NULL, KEEL_STR_NULL};
	while (is_ows(*s))
		s++;
	size_t tlen = token_len(s);
	if (tlen == 0 || s[tlen] != '/')
		return false;
	size_t slen = token_len(s + tlen + 1);
	if (slen == 0)
		return false;
	mt->type = keel_str_make(s, tlen + 1 + slen);
	s += tlen + 1 + slen;
	for (;;) {
		while (is_ows(*s))
			s++;
		if (!*s)
			return true;
		if (*s++ != ';')
			return false;
		while (is_ows(*s))
			s++;
		if (!*s)
			return true; /* a trailing ';' is tolerated */
		size_t nlen = token_len(s);
		if (nlen == 0 || s[nlen] != '=')
			return false;
		const char *name = s;
		s += nlen + 1;
		struct keel_str value;
		if (*s == '"') {
			/* A quoted string; a charset never needs a backslash,
			 * so one is kept as written (and matches no charset). */
			const char *v = ++s;
			while (*s && *s != '"') {
				if (*s == '\\' && s[1])
					s++;
				s++;
			}
			if (*s != '"')
				return false;
			value = keel_str_make(v, (size_t)(s - v));
			s++;
		} else {
			size_t vlen = token_len(s);
			if (vlen == 0)
				return false;
			value = keel_str_make(s, vlen);
			s += vlen;
		}
		if (nlen == 7 && strncasecmp(name, "charset", 7) == 0)
			mt->charset = value;
	}
}

bool keel_media_type_is(const struct keel_media_type *mt, const char *name)
{
	size_t n = strlen(name);
	return mt->type.len == n && strncasecmp(mt->type.ptr, name, n) == 0;
}

bool keel_media_type_is_json(const struct keel_media_type *mt)
{
	const char *slash = memchr(mt->type.ptr, '/', mt->type.len);
	size_t sub = mt->type.len - (size_t)(slash + 1 - mt->type.ptr);
	const char *end = mt->type.ptr + mt->type.len;
	return (sub == 4 && strncasecmp(end - 4, "json", 4) == 0) ||
	       (sub > 5 && strncasecmp(end - 5, "+json", 5) == 0);
}

bool keel_media_type_utf8(const struct keel_media_type *mt)
{
	struct keel_str c = mt->charset;
	return !c.ptr || (c.len == 5 && strncasecmp(c.ptr, "utf-8", 5) == 0) ||
	       (c.len == 8 && strncasecmp(c.ptr, "us-ascii", 8) == 0);
}

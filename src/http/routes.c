/*
 * routes.c - every path keel serve answers, in one table: its path as the
 * OpenAPI document writes it (docs/openapi.json, served at
 * /v1/openapi.json), the methods it takes and whether it needs a token.
 * The router (server.c) finds a request's route here and nowhere else, so
 * the table is the server's whole surface: tests/test_http.c holds it to
 * the document both ways, and tests/http_openapi.sh holds the document to
 * what the running server answers.
 */
#include "server.h"

/* Order matters only where two could match: /ui/assets/... before the
 * page's views. */
const struct keel_http_route keel_http_routes[] = {
    {"/v1/events", EP_EVENTS, "POST", false, false},
    {"/v1/tenants", EP_TENANTS, "GET, HEAD", false, false},
    {"/v1/tenants/{tenant}/stats", EP_STATS, "GET, HEAD", false, false},
    {"/v1/tenants/{tenant}/entities", EP_ENTITIES, "GET, HEAD", false, false},
    {"/v1/tenants/{tenant}/search", EP_SEARCH, "GET, HEAD", false, false},
    {"/v1/tenants/{tenant}/entities/{subject}", EP_ENTITY, "GET, HEAD, DELETE", false, false},
    {"/v1/tenants/{tenant}/entities/{subject}/history", EP_HISTORY, "GET, HEAD", false, false},
    {"/v1/tenants/{tenant}/entities/{subject}/why", EP_WHY, "GET, HEAD", false, false},
    {"/v1/openapi.json", EP_OPENAPI, "GET, HEAD", true, false},
    {"/healthz", EP_HEALTHZ, "GET, HEAD", true, false},
    {"/metrics", EP_METRICS, "GET, HEAD", false, false},
    {"/ui", EP_UI_MOVED, "GET, HEAD", true, false},
    {"/ui/", EP_UI, "GET, HEAD", true, false},
    {"/ui/assets/{asset}", EP_UI_ASSET, "GET, HEAD", true, true},
    {"/ui/{view}", EP_UI, "GET, HEAD", true, true},
};
const size_t keel_http_nroutes = sizeof keel_http_routes / sizeof keel_http_routes[0];

/* Whether the segment s[0..n) matches the template's segment t[0..m): a
 * literal is itself, a parameter ({name}) any segment but the empty one. */
static bool segment_matches(const char *t, size_t m, const char *s, size_t n)
{
	if (m >= 2 && t[0] == '{' && t[m - 1] == '}')
		return n > 0;
	return m == n && memcmp(t, s, n) == 0;
}

/* Whether url's path matches r's; its segments (percent-escaped as sent)
 * into seg and len, *n of them. */
static bool route_matches(const struct keel_http_route *r, const char *url, const char **seg,
			  size_t *len, size_t *n)
{
	const char *t = r->path + 1, *u = url + 1;
	*n = 0;
	for (;;) {
		const char *tslash = strchr(t, '/');
		size_t tl = tslash ? (size_t)(tslash - t) : strlen(t);
		const char *uslash = strchr(u, '/');
		size_t ul = uslash ? (size_t)(uslash - u) : strlen(u);
		bool last = !tslash;
		if (last && r->rest && tl >= 2 && t[0] == '{') {
			/* the rest of the path, slashes and all */
			ul = strlen(u);
			uslash = NULL;
		}
		if (*n == KEEL_HTTP_MAX_SEGMENTS || !segment_matches(t, tl, u, ul))
			return false;
		seg[*n] = u;
		len[*n] = ul;
		(*n)++;
		if (last || !uslash)
			return last && !uslash;
		t = tslash + 1;
		u = uslash + 1;
	}
}

const struct keel_http_route *keel_http_route_find(const char *url, const char **seg,
						   size_t *len, size_t *n)
{
	if (*url != '/')
		return NULL;
	for (size_t i = 0; i < keel_http_nroutes; i++)
		if (route_matches(&keel_http_routes[i], url, seg, len, n))
			return &keel_http_routes[i];
	return NULL;
}

bool keel_http_route_allows(const struct keel_http_route *r, const char *method)
{
	/* r->allow is a list of tokens, ", " between them. */
	size_t m = strlen(method);
	for (const char *p = r->allow; *p;) {
		const char *comma = strchr(p, ',');
		size_t l = comma ? (size_t)(comma - p) : strlen(p);
		if (l == m && memcmp(p, method, m) == 0)
			return true;
		if (!comma)
			break;
		p = comma + 1;
		while (*p == ' ')
			p++;
	}
	return false;
}

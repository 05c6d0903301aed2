/*
 * ui.c - the page keel serve serves at /ui/ (docs/ui.md): one index.html
 * for every view's address (the page routes itself from its path), its
 * script, its style sheet and its icon (named in the page, so a browser
 * does not ask for /favicon.ico, which needs a token). The four files
 * are compiled in from ui/
 * (cmake/Embed.cmake), so the server reads nothing from disk for them.
 *
 * None of these answers needs a token: they are the same bytes for
 * everyone and carry no data. The page asks for the token and sends it
 * with its own requests to /v1, where it is checked as for any client.
 */
#include "server.h"

extern const char keel_ui_index_html[], keel_ui_keel_js[], keel_ui_keel_css[], keel_ui_keel_svg[];
extern const size_t keel_ui_index_html_len, keel_ui_keel_js_len, keel_ui_keel_css_len,
    keel_ui_keel_svg_len;

/* Nothing but the server's own script and style: no inline script (so an
 * API value that found its way into the markup could not run), no other
 * origin, no forms posting anywhere, never inside another site's frame. */
#define UI_CSP                                                                       \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "  \
	"connect-src 'self'; base-uri 'none'; form-action 'none'; "                  \
	"frame-ancestors 'none'"

#define UI_HEADERS                                                             \
	"Content-Security-Policy", UI_CSP, MHD_HTTP_HEADER_X_CONTENT_TYPE_OPTIONS, \
	    "nosniff", "Referrer-Policy", "no-referrer", MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache"

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* A JSON error document (keel_http_error_doc) with the /ui headers. */
static enum MHD_Result ui_error(struct keel_server *srv, struct MHD_Connection *c,
				unsigned status, const char *allow, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static enum MHD_Result ui_error(struct keel_server *srv, struct MHD_Connection *c,
				unsigned status, const char *allow, const char *fmt, ...)
{
	struct keel_buf b;
	keel_buf_init(&b);
	va_list ap;
	va_start(ap, fmt);
	keel_http_error_vdoc(&b, fmt, ap);
	va_end(ap);
	const char *headers[] = {UI_HEADERS,
				 MHD_HTTP_HEADER_CONTENT_TYPE,
				 "application/json",
				 allow ? MHD_HTTP_HEADER_ALLOW : NULL,
				 allow,
				 NULL};
	enum MHD_Result ret = keel_http_answer_headers(srv, c, status, b.data, b.len, false,
						       headers);
	keel_buf_free(&b);
	return ret;
}

static enum MHD_Result ui_file(struct keel_server *srv, struct MHD_Connection *c,
			       const char *body, size_t len, const char *content_type)
{
	const char *headers[] = {UI_HEADERS, MHD_HTTP_HEADER_CONTENT_TYPE, content_type,
				 NULL};
	return keel_http_answer_headers(srv, c, MHD_HTTP_OK, body, len, true, headers);
}

enum MHD_Result keel_http_ui_not_allowed(struct keel_server *srv, struct MHD_Connection *c,
					 const char *method)
{
	return ui_error(srv, c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET, HEAD", KEEL_HTTP_NOT_ALLOWED,
			method);
}

enum MHD_Result keel_http_ui(struct keel_server *srv, struct MHD_Connection *c, const char *url)
{
	if (strcmp(url, "/ui") == 0) {
		const char *headers[] = {UI_HEADERS, MHD_HTTP_HEADER_LOCATION, "/ui/", NULL};
		return keel_http_answer_headers(srv, c, MHD_HTTP_MOVED_PERMANENTLY, "", 0, true,
						headers);
	}
	if (!starts_with(url, "/ui/assets/")) {
		/* Every view's address is the page; its script reads the path. */
		return ui_file(srv, c, keel_ui_index_html, keel_ui_index_html_len,
			       "text/html; charset=utf-8");
	}
	const char *name = url + strlen("/ui/assets/");
	if (strcmp(name, "keel.js") == 0)
		return ui_file(srv, c, keel_ui_keel_js, keel_ui_keel_js_len,
			       "text/javascript; charset=utf-8");
	if (strcmp(name, "keel.css") == 0)
		return ui_file(srv, c, keel_ui_keel_css, keel_ui_keel_css_len,
			       "text/css; charset=utf-8");
	if (strcmp(name, "keel.svg") == 0)
		return ui_file(srv, c, keel_ui_keel_svg, keel_ui_keel_svg_len, "image/svg+xml");
	return ui_error(srv, c, MHD_HTTP_NOT_FOUND, NULL, "%s: no such asset", url);
}

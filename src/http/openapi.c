/*
 * openapi.c - GET /v1/openapi.json: the OpenAPI 3.1 description of every
 * route, parameter, body, answer and error of keel serve, which is
 * docs/openapi.json compiled into the library (cmake/Embed.cmake), so that
 * the server describes exactly the API it was built with and reads nothing
 * from disk. It needs no token: it holds no data, and a client generator
 * should not need one to start.
 */
#include "server.h"

extern const char keel_openapi_json[];
extern const size_t keel_openapi_json_len;

enum MHD_Result keel_http_openapi(struct keel_server *srv, struct MHD_Connection *c)
{
	const char *headers[] = {MHD_HTTP_HEADER_CONTENT_TYPE, "application/json",
				 MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache", NULL};
	return keel_http_answer_headers(srv, c, MHD_HTTP_OK, keel_openapi_json,
					keel_openapi_json_len, true, headers);
}

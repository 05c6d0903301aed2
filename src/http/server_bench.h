/*
 * server_bench.h - what bench_http reaches in the server that is not API
 * (keel.h): a server that drops what it accepts must not be one option
 * away from a user.
 */
#ifndef KEEL_HTTP_SERVER_BENCH_H
#define KEEL_HTTP_SERVER_BENCH_H

#include <stdbool.h>

#include "keel.h"

/* How bench_http runs the server besides as keel serve does. */
enum keel_server_bench {
	KEEL_SERVE_AS_IS,
	/* POST /v1/events reads each body and answers 200 without parsing or
	 * ingesting it (the limit rows; docs/http.md). */
	KEEL_SERVE_NULL,
	/* The writer's commits are not made durable before their answers
	 * (keel_store_durable_commits left out): what that costs. */
	KEEL_SERVE_UNSYNCED,
};

/* keel_server_start, run as mode says. */
int keel_server_start_bench(const struct keel_server_options *o, enum keel_server_bench mode,
			    struct keel_server **out, char **errmsg);

#endif

/*
 * server_bench.h - what bench_http reaches in the server that is not API
 * (keel.h): a server that drops what it accepts must not be one option
 * away from a user.
 */
#ifndef KEEL_HTTP_SERVER_BENCH_H
#define KEEL_HTTP_SERVER_BENCH_H

#include <stdbool.h>

#include "keel.h"

/* keel_server_start in null mode: POST /v1/events reads each body and
 * answers 200 without parsing or ingesting it (bench_http's limit rows;
 * docs/http.md). */
int keel_server_start_dropping_events(const struct keel_server_options *o,
				      struct keel_server **out, char **errmsg);

/* keel_server_start with the writer's commits answered before they are
 * durable (keel_store_durable_commits left out): what the sync before
 * each answer costs (bench_http's "no sync" rows; docs/http.md,
 * "Durability"). */
int keel_server_start_unsynced(const struct keel_server_options *o, struct keel_server **out,
			       char **errmsg);

#endif

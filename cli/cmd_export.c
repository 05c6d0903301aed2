/*
 * cmd_export.c - keel export: snapshots of the graph as CSV, NDJSON or
 * GraphML for other tools (docs/export.md).
 */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static int export_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"at", required_argument, NULL, 'a'},
	    {"known-at", required_argument, NULL, 'k'},
	    {"tenant", required_argument, NULL, 't'},
	    {"output", required_argument, NULL, 'o'},
	    {"store", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct keel_export_options o = {.size = sizeof o, .format = KEEL_EXPORT_NDJSON, .out = stdout};
	const char *url = NULL, *format = NULL;
	int c, rc;
	optind = 0;
	while ((c = getopt_long(argc, argv, "f:a:k:t:o:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			format = optarg;
			break;
		case 'a':
			if ((rc = cli_time_option(cmd, "--at", optarg, &o.at)))
				return rc;
			o.at_set = true;
			break;
		case 'k':
			if ((rc = cli_time_option(cmd, "--known-at", optarg, &o.known_at)))
				return rc;
			o.known_at_set = true;
			break;
		case 't':
			o.tenant = optarg;
			break;
		case 'o':
			o.dir = optarg;
			break;
		case 's':
			url = optarg;
			break;
		case 'h':
			cli_help(cmd, stdout);
			return CLI_OK;
		default:
			return cli_unknown_option(cmd, argv, opts);
		}
	}
	if (optind != argc)
		return cli_usage_error(cmd, "unexpected argument \"%s\"", argv[optind]);
	if (!format)
		return cli_usage_error(cmd,
				       "--format is required (csv, ndjson or graphml)");
	if (!strcmp(format, "csv"))
		o.format = KEEL_EXPORT_CSV;
	else if (!strcmp(format, "ndjson"))
		o.format = KEEL_EXPORT_NDJSON;
	else if (!strcmp(format, "graphml"))
		o.format = KEEL_EXPORT_GRAPHML;
	else
		return cli_usage_error(cmd, "--format \"%s\": not csv, ndjson or graphml",
				       format);
	if (o.format == KEEL_EXPORT_CSV && !o.dir)
		return cli_usage_error(cmd,
				       "--format csv writes one file per table: give "
				       "--output DIR");
	if (o.format == KEEL_EXPORT_GRAPHML && !o.dir && !o.tenant)
		return cli_usage_error(
		    cmd, "--format graphml writes one file per tenant: give "
			 "--output DIR, or --tenant T for standard output");

	struct keel_store *s = cli_open_existing_store(cmd, url);
	if (!s)
		return CLI_FATAL;
	rc = keel_export(s, &o);
	if (rc)
		rc = cli_error(cmd, "%s", keel_store_errmsg(s));
	else if (!o.dir)
		rc = cli_finish_stdout(cmd, rc);
	keel_store_close(s);
	return rc;
}

const struct keel_cmd keel_cmd_export = {
    .name = "export",
    .summary = "Write a snapshot as CSV, NDJSON or GraphML.",
    .usage = "export --format csv|ndjson|graphml [--at TIME] [--known-at TIME]\n"
	     "                 [--tenant T] [--output DIR] [--store URL]\n"
	     "\n"
	     "options:\n"
	     "  -f, --format F     csv, ndjson or graphml (required)\n"
	     "  -a, --at TIME      rows valid at TIME (RFC 3339 or now), entities\n"
	     "                     first seen and events up to it\n"
	     CLI_HELP_KNOWN_AT
	     "  -t, --tenant T     only this tenant\n"
	     "  -o, --output DIR   write files into DIR (created if missing):\n"
	     "                     entities/facts/relations/events.csv,\n"
	     "                     export.ndjson, TENANT.graphml\n"
	     CLI_HELP_STORE
	     "  -h, --help         this help\n"
	     "\n"
	     "Without --at, csv and ndjson hold every row (the whole history) and\n"
	     "graphml the current state. Without --output, ndjson (and graphml of\n"
	     "one --tenant) go to standard output; csv needs --output.",
    .run = export_run,
};

/*
 * cmd_stats.c - keel stats: counts of entities, facts, relations and
 * events per tenant, as one JSON document (docs/cli.md).
 */
#include "cli.h"

static int stats_query(struct keel_store *s, char **args, int nargs,
		       const struct keel_read_options *o, char **json)
{
	return keel_stats(s, nargs ? args[0] : NULL, o, json);
}

static int stats_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct cli_read read = {
	    .kind = KEEL_QUERY_STATS,
	    .takes_tenant = true,
	    .query = stats_query,
	};
	return cli_run_read(cmd, &read, argc, argv);
}

const struct keel_cmd keel_cmd_stats = {
    .name = "stats",
    .summary = "Print row counts per tenant.",
    .usage = "stats [--tenant T] [--known-at TIME] [--json] [--store URL]\n"
	     "\n"
	     "options:\n"
	     "  -t, --tenant T     only this tenant (exits 1 if it has no data)\n"
	     CLI_HELP_KNOWN_AT
	     CLI_HELP_JSON
	     CLI_HELP_STORE
	     "  -h, --help         this help\n"
	     "\n"
	     "Prints for each tenant the number of entities, fact rows, relation\n"
	     "rows and logged events, and their totals.\n"
	     "On a terminal it is printed as aligned text; into a pipe or a\n"
	     "file, or with --json, as one line of JSON (docs/cli.md).",
    .run = stats_run,
};

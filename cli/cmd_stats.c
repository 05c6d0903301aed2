/*
 * cmd_stats.c - keel stats: counts of entities, facts, relations and
 * events per tenant, as one JSON document (docs/cli.md).
 */
#include "cli.h"

#include <getopt.h>

static int stats_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"tenant", required_argument, NULL, 't'},
	    {"known-at", required_argument, NULL, 'k'},
	    {"json", no_argument, NULL, 'j'},
	    {"store", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *url = NULL, *tenant = NULL;
	bool as_json = false;
	struct keel_read_options o = {.size = sizeof o};
	int c, rc;
	optind = 0;
	while ((c = getopt_long(argc, argv, "t:k:js:h", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			if ((rc = cli_time_option(cmd, "--known-at", optarg, &o.known_at)))
				return rc;
			o.known_at_set = true;
			break;
		case 'j':
			as_json = true;
			break;
		case 't':
			tenant = optarg;
			break;
		case 's':
			url = optarg;
			break;
		case 'h':
			cli_help(cmd, stdout);
			return CLI_OK;
		default:
			return cli_bad_option(cmd);
		}
	}
	if (optind != argc)
		return cli_usage_error(cmd, "unexpected argument \"%s\"", argv[optind]);

	struct keel_store *s = cli_open_existing_store(cmd, url);
	if (!s)
		return CLI_FATAL;
	char *json = NULL;
	rc = keel_stats(s, tenant, &o, &json);
	if (rc)
		rc = cli_error(cmd, "%s", keel_store_errmsg(s));
	else
		rc = cli_print_doc(cmd, KEEL_QUERY_STATS, json, as_json);
	keel_store_close(s);
	return rc;
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

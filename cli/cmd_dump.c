/*
 * cmd_dump.c - keel dump: the canonical NDJSON dump of the store, or of one
 * tenant (docs/dump.md).
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static int dump_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"tenant", required_argument, NULL, 't'},
	    {"known-at", required_argument, NULL, 'k'},
	    {"output", required_argument, NULL, 'o'},
	    {"store", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *url = NULL, *tenant = NULL, *output = NULL;
	struct keel_read_options o = {.size = sizeof o};
	int c, rc;
	optind = 0;
	while ((c = getopt_long(argc, argv, "t:k:o:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			tenant = optarg;
			break;
		case 'k':
			if ((rc = cli_time_option(cmd, "--known-at", optarg, &o.known_at)))
				return rc;
			o.known_at_set = true;
			break;
		case 'o':
			output = optarg;
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

	struct keel_store *s = cli_open_existing_store(cmd, url);
	if (!s)
		return CLI_FATAL;
	FILE *out = cli_output_open(cmd, output);
	if (!out) {
		keel_store_close(s);
		return CLI_FATAL;
	}
	rc = keel_dump(s, tenant, &o, out);
	if (rc)
		rc = cli_error(cmd, "%s", keel_store_errmsg(s));
	rc = cli_output_close(cmd, out, output, rc);
	keel_store_close(s);
	return rc;
}

const struct keel_cmd keel_cmd_dump = {
    .name = "dump",
    .summary = "Write the canonical NDJSON dump of the store.",
    .usage = "dump [--tenant T] [--known-at TIME] [--output FILE] [--store URL]\n"
	     "\n"
	     "options:\n"
	     "  -t, --tenant T     only this tenant (exits 1 if it has no data)\n"
	     CLI_HELP_KNOWN_AT
	     "  -o, --output FILE  write to FILE (default: standard output)\n"
	     CLI_HELP_STORE
	     "  -h, --help         this help\n"
	     "\n"
	     "One record a line: entities, facts, relations and events, sorted by\n"
	     "tenant and type (docs/dump.md). Two stores holding the same data give\n"
	     "byte-identical dumps; 'keel load' restores one. With --known-at, the\n"
	     "dump of a store that had recorded only what this one had by TIME.",
    .run = dump_run,
};

/*
 * cmd_history.c - keel history: every row of a subject's timelines with
 * its provenance, as one JSON document (docs/cli.md).
 */
#include "cli.h"

#include <getopt.h>

static int history_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"store", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *url = NULL;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "s:h", opts, NULL)) != -1) {
		switch (c) {
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
	int n = argc - optind;
	if (n != 2 && n != 3)
		return cli_usage_error(cmd, "expected a tenant, a subject and optionally "
					    "a predicate");

	struct keel_store *s = cli_open_store(cmd, url);
	if (!s)
		return CLI_FATAL;
	char *json = NULL;
	int rc = keel_history(s, argv[optind], argv[optind + 1],
			      n == 3 ? argv[optind + 2] : NULL, &json);
	if (rc)
		rc = cli_error(cmd, "%s", keel_store_errmsg(s));
	else
		rc = cli_print_json(cmd, json);
	keel_store_close(s);
	return rc;
}

const struct keel_cmd keel_cmd_history = {
    .name = "history",
    .summary = "Print every row of a subject's timelines with provenance, as JSON.",
    .usage = "history TENANT SUBJECT [PREDICATE] [--store URL]\n"
	     "\n"
	     "options:\n"
	     "  -s, --store URL    store (default: $KEEL_STORE, else sqlite:keel.db)\n"
	     "  -h, --help         this help\n"
	     "\n"
	     "Prints one line of JSON: the fact rows and the outgoing relation rows\n"
	     "of SUBJECT, closed and emptied rows included, each with valid_from,\n"
	     "valid_to, asserted_by and closed_by. PREDICATE narrows both lists to\n"
	     "one predicate or relation name. Exits 1 when the entity does not exist.",
    .run = history_run,
};

/*
 * cmd_show.c - keel show: an entity with its facts and relations (both
 * directions) valid at a time, as one JSON document (docs/cli.md).
 */
#include "cli.h"

#include <getopt.h>

static int show_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"at", required_argument, NULL, 'a'},
	    {"store", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *url = NULL;
	int64_t at = keel_time_now();
	const char *why;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "a:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			if (!cli_parse_time(optarg, &at, &why))
				return cli_usage_error(cmd, "--at \"%s\": %s", optarg,
						       why);
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
	if (argc - optind != 2)
		return cli_usage_error(cmd, "expected a tenant and a subject");

	struct keel_store *s = cli_open_store(cmd, url);
	if (!s)
		return CLI_FATAL;
	char *json = NULL;
	int rc = keel_show(s, argv[optind], argv[optind + 1], at, &json);
	if (rc)
		rc = cli_error(cmd, "%s", keel_store_errmsg(s));
	else
		rc = cli_print_json(cmd, json);
	keel_store_close(s);
	return rc;
}

const struct keel_cmd keel_cmd_show = {
    .name = "show",
    .summary = "Print an entity, its facts and its relations at a time, as JSON.",
    .usage = "show TENANT SUBJECT [--at TIME] [--store URL]\n"
	     "\n"
	     "options:\n"
	     "  -a, --at TIME      RFC 3339 time to look at (default: now)\n"
	     "  -s, --store URL    store (default: $KEEL_STORE, else sqlite:keel.db)\n"
	     "  -h, --help         this help\n"
	     "\n"
	     "Prints one line of JSON: the entity's kind, first_seen and last_seen,\n"
	     "the facts valid at TIME (predicate -> value), and the links valid at\n"
	     "TIME, outgoing (SUBJECT is the subject) and incoming (SUBJECT is the\n"
	     "object). Exits 1 when the entity does not exist.",
    .run = show_run,
};
